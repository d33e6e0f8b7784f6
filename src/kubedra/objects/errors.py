"""Problems found in user input, each naming where it is: file, document, object and field."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Location:
    """Where a problem or warning sits: ``file``, 0-based document index, ``Kind/name`` and a field path."""

    file: str = ""
    document: int | None = None
    object: str = ""
    field: str = ""
    within: str = ""  # where the object sits in its document (``items[3]`` of a List); for lines, not printed

    def __str__(self) -> str:
        parts = []
        if self.file:
            parts.append(self.file if self.document is None else f"{self.file}[{self.document}]")
        if self.object:
            parts.append(self.object)
        if self.field:
            parts.append(self.field)
        return ": ".join(parts)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input; ``unreadable`` when it could not even be read (a file that cannot be
    opened, text that does not parse), as opposed to an object the API server would reject."""

    location: Location
    message: str
    unreadable: bool = False
    # A reference the inputs do not resolve (a class, claim or template defined elsewhere): the API server accepts
    # the object, so ``validate`` warns instead of failing, unless --strict-references.
    unresolved: bool = False

    def __str__(self) -> str:
        where = str(self.location)
        return f"{where}: {self.message}" if where else self.message


@dataclass(frozen=True)
class ConversionWarning:
    """A legacy or beta construct that was rewritten: what was written, what it is today, what was assumed."""

    location: Location
    written: str
    today: str
    assumed: str = ""
    code: str = ""

    def __str__(self) -> str:
        text = f"{self.location}: {self.written} -> {self.today}"
        return f"{text} (assumed: {self.assumed})" if self.assumed else text


class KubedraError(Exception):
    """Base of every error kubedra raises on purpose."""


@dataclass
class InvalidInputError(KubedraError):
    """The input cannot be used; ``problems`` lists every problem found, one message each."""

    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)
