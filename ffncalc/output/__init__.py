"""The output: results as documents (rich table, markdown, LaTeX) and records (JSON, CSV), figures, docs."""
