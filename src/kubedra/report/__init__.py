"""``kubedra simulate --html``: the run drawn for a person (Plotly), from the run's own records and events.

``series`` turns a run into plain data (pure, tested against the run); ``page`` draws it with Plotly, its
JavaScript inlined so the page opens with no network.
"""

from kubedra.report.page import html_report

__all__ = ["html_report"]
