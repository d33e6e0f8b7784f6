"""Real cluster traces read as kubedra inputs (NodePools, claim templates, pods)."""
