"""The report model and the baseline of judged findings: plain data, no engine."""
