#!/usr/bin/python3
"""Per-column ROC AUC with scikit-learn: reads rows "s0..s{k-1},t0..t{k-1}" from argv[1], prints one
line per column: the AUC (repr) or "single" when the column's targets have one class."""
import sys

import numpy as np
from sklearn.metrics import roc_auc_score

data = np.loadtxt(sys.argv[1], delimiter=",", ndmin=2)
k = data.shape[1] // 2
for c in range(k):
    t = data[:, k + c]
    if len(np.unique(t)) < 2:
        print("single")
    else:
        print(repr(float(roc_auc_score(t, data[:, c]))))
