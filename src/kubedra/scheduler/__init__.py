"""Pure pod scheduling with DRA: claim lifecycle, extended resources, filtering, scoring, explain."""
