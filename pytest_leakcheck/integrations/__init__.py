"""Optional integrations: export to tables, Great Expectations."""
