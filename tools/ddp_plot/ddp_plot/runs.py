"""A run: what one input (a metrics file, an event file or folder) says, as named series of points.

Series names are the metrics files' field names; an event file's tags map onto them (events.py).
A point is (global step, epoch or None, value); event files know no epochs.

A resumed job writes again the steps after its checkpoint that a killed attempt had already logged
(docs/KUBEFLOW.md, "TensorBoard", resume rule). As TensorBoard does, a point at step s replaces the
points of its series read earlier at steps >= s, so each step is shown once, from the attempt that
went on to the end."""

TRAIN_LOSS, EVAL_LOSS, ACCURACY, AUC, IMAGES_PER_SEC = "train_loss", "eval_loss", "accuracy", "auc", "images_per_sec"
SERIES = (TRAIN_LOSS, EVAL_LOSS, ACCURACY, AUC, IMAGES_PER_SEC)


class Run:
    def __init__(self, path):
        self.path = path
        self.label = None  # set by the command: --label, or a name made from the path
        self.series = {name: [] for name in SERIES}

    def add(self, name, step, epoch, value):
        """`value` None (a metrics file's null: the trainer's NaN or infinity) only supersedes."""
        points = self.series[name]
        while points and points[-1][0] >= step:
            points.pop()
        if value is not None:
            points.append((step, epoch, value))

    def drop_from(self, step):
        """Every series forgets its points at steps >= `step` (a SessionLog START at `step`)."""
        for points in self.series.values():
            while points and points[-1][0] >= step:
                points.pop()

    def empty(self):
        return not any(self.series.values())
