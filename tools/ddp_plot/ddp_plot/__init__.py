"""ddp-plot's modules: readers for the trainers' --metrics-file (jsonl) and --tensorboard-dir
(events, over tfrecord and wire), the runs they make (runs), the picture (draw), the command (cli)."""
