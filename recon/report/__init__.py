"""A finished attack scored and written: summary, per-record verdicts, the audit page, plots."""
