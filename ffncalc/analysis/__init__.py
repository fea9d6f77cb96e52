"""The analyses: count, conventions, compare, planning (training, inference, fit), verify, bench, summary tables."""
