#!/usr/bin/python3
"""The chaos scenario's verdicts, proven on made-up histories (no root, no pods, no binaries): the
step-history check must pass an interrupted run that resumed correctly and catch a lost step, a
repeated step, a resume from a checkpoint nobody wrote and a run that stops short (the elastic job's
check, without a reference, the same where it can tell, and a node back that never joins a group);
a round's plan must follow from its seed alone, and a lost node is never the rendezvous endpoint's;
the overrides must reach the trainer and ddprun where they read them, and the elastic job its short
last call. Run by ctest (rehearsal_chaos_checks) and directly."""
import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "k8s"))
import chaos  # noqa: E402
import elastic  # noqa: E402
import kustomize_lite  # noqa: E402

# The reference: 8 steps, 4 per epoch, losses 8/1 .. 8/8 (any distinct values).
REF_LOSS = {s: round(1.0 / s, 6) for s in range(1, 9)}


def train(step, loss=None):
    return {"type": "train", "step": step, "epoch": 1 + (step - 1) // 4, "train_loss": REF_LOSS[step] if loss is None else loss}


def evaluation(epoch, accuracy=0.5):
    return {"type": "eval", "step": 4 * epoch, "epoch": epoch, "eval_loss": 1.5, "accuracy": accuracy, "correct": 5, "total": 10}


def summary(steps=8):
    return {"type": "summary", "steps": steps}


REFERENCE = [train(s) for s in range(1, 5)] + [evaluation(1)] + [train(s) for s in range(5, 9)] + [evaluation(2), summary()]


class HistoryCheck(unittest.TestCase):
    def problems(self, recs, written=(2, 4, 6, 8)):
        return chaos.check_history(recs, REFERENCE, set(written))[0]

    def test_undisturbed_run_passes(self):
        self.assertEqual(self.problems(REFERENCE), [])

    def test_resume_from_a_written_checkpoint_passes(self):
        # killed after step 5 was logged (checkpoint at 4), steps 5.. trained again, same losses
        recs = [train(s) for s in range(1, 5)] + [evaluation(1), train(5)] + [train(s) for s in range(5, 9)] + \
               [evaluation(2), summary()]
        problems, jumps = chaos.check_history(recs, REFERENCE, {2, 4, 6, 8})
        self.assertEqual(problems, [])
        self.assertEqual(jumps, [4])

    def test_restart_from_scratch_passes(self):
        recs = [train(1), train(2)] + REFERENCE
        self.assertEqual(self.problems(recs), [])

    def test_lost_steps_are_caught(self):
        # a resume past the furthest step trained: steps 5 and 6 never ran
        recs = [train(s) for s in range(1, 5)] + [train(s) for s in range(7, 9)] + [summary()]
        self.assertTrue(any("never trained" in p for p in self.problems(recs)), self.problems(recs))

    def test_a_step_applied_twice_changes_the_later_losses(self):
        # resumed from the right checkpoint but the state had step 5 applied twice: step 6 differs
        recs = REFERENCE[:5] + [train(5), train(6, loss=0.25)] + [train(s) for s in (7, 8)] + [evaluation(2), summary()]
        self.assertTrue(any("step 6: loss 0.25" in p for p in self.problems(recs)), self.problems(recs))

    def test_resume_from_a_checkpoint_nobody_wrote_is_caught(self):
        recs = [train(s) for s in range(1, 6)] + [train(s) for s in range(4, 9)] + [summary()]
        self.assertTrue(any("no checkpoint of step 3" in p for p in self.problems(recs, written=(2, 4))),
                        self.problems(recs, written=(2, 4)))

    def test_a_run_that_stops_short_is_caught(self):
        recs = [train(s) for s in range(1, 7)] + [summary(6)]
        problems = self.problems(recs)
        self.assertTrue(any("reaches step 6" in p for p in problems), problems)
        self.assertTrue(any("last summary" in p for p in problems), problems)

    def test_a_different_evaluation_is_caught(self):
        recs = REFERENCE[:4] + [evaluation(1, accuracy=0.6)] + REFERENCE[5:]
        self.assertTrue(any("evaluation of epoch 1" in p for p in self.problems(recs)), self.problems(recs))


class ElasticHistoryCheck(unittest.TestCase):
    """check_elastic_history: no losses to compare (the group size changes them), 2 epochs."""

    def problems(self, recs, written=(2, 4, 6, 8)):
        return chaos.check_elastic_history(recs, set(written), 2)[0]

    def test_undisturbed_run_passes(self):
        self.assertEqual(self.problems(REFERENCE), [])

    def test_a_resume_at_another_size_passes(self):
        # a node lost after step 5 (checkpoint 4), the smaller group's epochs are longer: steps 5..10
        recs = [train(s) for s in range(1, 6)] + [train(s, loss=0.3) for s in range(5, 7)] + \
               [{"type": "eval", "step": 7, "epoch": 1}] + [train(s, loss=0.2) for s in range(7, 9)] + \
               [{"type": "train", "step": s, "epoch": 2, "train_loss": 0.1} for s in (9, 10)] + \
               [{"type": "eval", "step": 10, "epoch": 2}, summary(10)]
        problems, jumps = chaos.check_elastic_history(recs, {4}, 2)
        self.assertEqual(problems, [])
        self.assertEqual(jumps, [4])

    def test_resume_from_a_checkpoint_nobody_wrote_is_caught(self):
        recs = [train(s) for s in range(1, 6)] + [train(s) for s in range(4, 9)] + [evaluation(2), summary()]
        self.assertTrue(any("no checkpoint of step 3" in p for p in self.problems(recs, written=(2, 4))))

    def test_lost_steps_are_caught(self):
        recs = [train(s) for s in range(1, 5)] + [train(s) for s in range(7, 9)] + [evaluation(2), summary()]
        self.assertTrue(any("never trained" in p for p in self.problems(recs)), self.problems(recs))

    def test_a_run_that_stops_short_is_caught(self):
        recs = [train(s) for s in range(1, 5)] + [evaluation(1), summary(4)]
        self.assertTrue(any("epochs [2] never evaluated" in p for p in self.problems(recs)), self.problems(recs))

    def test_a_summary_that_disagrees_is_caught(self):
        recs = REFERENCE[:-1] + [summary(7)]
        self.assertTrue(any("last summary" in p for p in self.problems(recs)), self.problems(recs))


class ElasticRejoins(unittest.TestCase):
    """elastic_rejoins on a made-up job: worker-2 lost at +5 s, back at +15 s, the job over at +45 s."""

    class Logs:
        def __init__(self, text):
            self.text = text

        def log_text(self, pod):
            return self.text

    class Result:
        started, finished = 1000.0, 1045.0
        created = {"j-worker-2": [0.2, 15.0]}

    def problems(self, last_run):
        f = chaos.Fault("lose-node", 5.0, "j-worker-2", duration=10.0)
        f.applied_at = 5.0
        text = "### first\nrun r attempt 0: node 2 of 3 runs ranks 4..5 of 6\n### back\n" + last_run
        return chaos.elastic_rejoins(self.Logs(text), self.Result(), [f])

    def test_a_node_back_in_a_group_passes(self):
        self.assertEqual(self.problems("run r attempt 2: node 0 of 3 runs ranks 0..1 of 6\n"), [])

    def test_a_node_left_waiting_is_caught(self):
        problems = self.problems("round 1 closed with 2 node(s) before this node joined: waiting\n")
        self.assertTrue(any("never ran in a group" in p for p in problems), problems)


class Plans(unittest.TestCase):
    def plan(self, seed):
        settings = chaos.Settings(rounds=1, seed=seed)
        variant, kind = settings.combos[seed % len(settings.combos)]
        faults = chaos.plan_faults(random.Random(seed), variant, kind, "job", 3, 15.0, 20.0)
        return variant, [f.describe() for f in faults]

    def test_a_seed_replays_its_plan(self):
        self.assertEqual(self.plan(12), self.plan(12))

    def test_consecutive_seeds_cover_every_variant_and_fault(self):
        seen = set()
        for seed in range(1, 1 + len(chaos.COMBOS)):
            variant, faults = self.plan(seed)
            seen.add((variant, faults[0].split()[0]))
        self.assertEqual(seen, set(chaos.COMBOS))

    def test_cuts_outlast_the_timeout(self):
        for seed in range(200):
            for f in chaos.plan_faults(random.Random(seed), "ddprun", "net-cut", "job", 3, 15.0, 20.0):
                if f.kind == "net-cut":
                    self.assertGreater(f.duration, 20.0)

    def test_a_lost_node_is_never_the_endpoint_and_comes_back(self):
        for seed in range(200):
            for f in chaos.plan_faults(random.Random(seed), "elastic", "lose-node", "job", 3, 15.0, 20.0):
                self.assertIn(f.pod, ("job-worker-1", "job-worker-2"))
                self.assertTrue(1.0 <= f.duration <= 30.0, f.duration)

    def test_filters_refuse_unknown_names(self):
        with self.assertRaises(ValueError):
            chaos.Settings(kinds=["kill-everything"])
        with self.assertRaises(ValueError):
            chaos.Settings(variants=["trainjob"])


class Overrides(unittest.TestCase):
    def test_trainer_and_ddprun_get_their_timeouts(self):
        for variant in chaos.VARIANTS:
            objs = kustomize_lite.render(os.path.join(REPO, chaos.VARIANTS[variant][0]))
            job = chaos.prepare_job(objs, variant, "j", 7.5)
            self.assertEqual(job["metadata"]["name"], "j")
            for rs in job["spec"]["pytorchReplicaSpecs"].values():
                c = rs["template"]["spec"]["containers"][0]
                args = c["args"]
                program = args.index("train_cifar10") if chaos.under_ddprun(variant) else -1
                self.assertEqual(args[args.index("--timeout") + 1], "7.5")
                self.assertGreater(args.index("--timeout"), program)
                self.assertEqual(args[args.index("--log-interval") + 1], "1")
                self.assertEqual(args[args.index("--checkpoint-every") + 1], str(chaos.CHECKPOINT_EVERY))
                self.assertEqual("--zero" in args, variant == "pytorchjob-zero")
                if chaos.under_ddprun(variant):
                    for flag in ("--join-timeout", "--store-timeout"):   # ddprun's options, before the program
                        self.assertLess(args.index(flag), program)
                        self.assertEqual(args[args.index(flag) + 1], "7.5")
                self.assertIn({"name": "OMP_NUM_THREADS", "value": "1"}, c["env"])
            if chaos.is_elastic(variant):
                self.assertNotIn("Master", job["spec"]["pytorchReplicaSpecs"])
                self.assertIn({"key": "last_call_timeout", "value": elastic.LAST_CALL_S},
                              job["spec"]["elasticPolicy"]["rdzvConf"])
                self.assertEqual(job["spec"]["nprocPerNode"], elastic.NPROC)


if __name__ == "__main__":
    unittest.main(verbosity=1)
