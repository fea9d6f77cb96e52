"""The analyses: count, conventions, compare, planning (train, infer), verify, bench, summary tables."""
