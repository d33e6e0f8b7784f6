"""Simulated time: workloads expanded into pods, arrivals and completions, the run loop and its report."""
