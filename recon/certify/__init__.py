"""The blind certificate and the precision rung: what a run can prove without the training set."""
