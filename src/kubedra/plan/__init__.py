"""``kubedra plan``: the cheapest fleet of candidate node pools that meets a goal, found by simulating candidates."""
