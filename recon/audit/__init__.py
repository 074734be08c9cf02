"""The auditor's answers beyond one run: the leak-width threshold, what DP promises (ReRo)."""
