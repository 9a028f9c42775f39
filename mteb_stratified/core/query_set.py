"""The set of evaluated queries behind a figure, and grouping by it.

Two scores are comparable only when they were computed on the same queries: a 5-query run and
a 323-query run of one task are not (their means estimate different things, and the smaller
one is mostly noise).  A :class:`QuerySet` names the split, the number of queries and a digest
of their ids; :func:`group_by_query_set` groups items by it.

The rule itself, "results are compared only when they were evaluated on the same query set", is
:func:`same_query_sets`, the one policy the leaderboard, ``stratify``, ``report`` and the MTEB
adapter apply: results of different sets are grouped, each group compared on its own and the
groups said apart (:meth:`QuerySetGroups.note`), or refused (``require_same``) with one
:class:`~mteb_stratified.core.errors.InputError` (:meth:`QuerySetGroups.refusal`).

The digest is the first 12 hex digits of SHA-256 over the sorted query ids, each as UTF-8
followed by a newline: independent of order, and written into the results files
(``query_set_size``, ``query_set_id``, ``query_set_subset``) by the tie-aware tasks.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, Generic, Iterable, TypeVar

from .errors import InputError

__all__ = ["QuerySet", "group_by_query_set", "query_set_id", "QUERY_SET_KEYS", "SUBSET_MARK",
           "subset_task_name", "base_task_name", "QuerySetGroups", "same_query_sets",
           "REQUIRE_SAME_OPTION"]

#: The score keys a results file records its query set under.
QUERY_SET_KEYS = ("query_set_size", "query_set_id", "query_set_subset")
#: What a quick-run subset adds to the task name its results are saved under
#: (``StratifiedNFCorpus__subset-q5-d100``), so that a subset and a full run of one task never
#: share mteb's cache entry (``results/<model>/<revision>/<task>.json``), in either order.
SUBSET_MARK = "__subset-"


def subset_task_name(task_name: str, max_queries, max_docs) -> str:
    """``task_name`` for a full run (both None), else ``<task>__subset-q<N>-d<M>`` (``all``
    for the one not limited)."""
    if max_queries is None and max_docs is None:
        return task_name
    q = "all" if max_queries is None else int(max_queries)
    d = "all" if max_docs is None else int(max_docs)
    return f"{task_name}{SUBSET_MARK}q{q}-d{d}"


def base_task_name(task_name: str) -> str:
    """The task a results file's ``task_name`` belongs to (the subset mark removed)."""
    return task_name.split(SUBSET_MARK, 1)[0]

T = TypeVar("T")


def query_set_id(qids: Iterable) -> str:
    """12 hex digits of SHA-256 over the sorted ids (``str``), one per line."""
    h = hashlib.sha256()
    for q in sorted(str(q) for q in qids):
        h.update(q.encode("utf-8", "surrogatepass") + b"\n")
    return h.hexdigest()[:12]


@dataclass(frozen=True)
class QuerySet:
    """The evaluated queries of a result: ``split``, ``n_queries`` and ``digest``
    (:func:`query_set_id`); ``n_queries`` and ``digest`` are None when the result does not
    record them (then it cannot be shown to share its queries with any other).  ``subset``
    names a quick-run subset of the data (e.g. of the documents, which the digest does not
    see): a subset run is never grouped with a full one."""

    split: str
    n_queries: int | None = None
    digest: str | None = None
    subset: str | None = None

    @classmethod
    def of(cls, qids: Iterable, split: str, *, subset: str | None = None) -> "QuerySet":
        ids = {str(q) for q in qids}
        return cls(str(split), len(ids), query_set_id(ids), subset)

    @classmethod
    def from_scores(cls, scores: dict, split: str) -> "QuerySet":
        """The query set a results file's score entry records (:data:`QUERY_SET_KEYS`); not
        known when it records none."""
        n, digest = scores.get("query_set_size"), scores.get("query_set_id")
        if not isinstance(digest, str) or isinstance(n, bool) or not isinstance(n, int):
            return cls(str(split))
        subset = scores.get("query_set_subset")
        return cls(str(split), n, digest, subset if isinstance(subset, str) else None)

    @property
    def known(self) -> bool:
        return self.digest is not None

    @property
    def label(self) -> str:
        """``test, 323 queries (id 3f2a9c01b7de)``, or ``test, queries not recorded``."""
        if not self.known:
            return f"{self.split}, queries not recorded"
        return (f"{self.split}, {self.n_queries} queries (id {self.digest})"
                + (f", subset {self.subset}" if self.subset else ""))

    def to_keys(self) -> dict:
        """The results-file score keys (:data:`QUERY_SET_KEYS`)."""
        return {"query_set_size": self.n_queries, "query_set_id": self.digest,
                "query_set_subset": self.subset}


def group_by_query_set(items: Iterable[T], key: Callable[[T], object]) -> list[list[T]]:
    """``items`` grouped by ``key(item)`` (a :class:`QuerySet`, or a tuple of them), in the
    order of each group's first item; the largest group first when sizes differ."""
    groups: dict = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    out = list(groups.values())
    return sorted(out, key=lambda g: -len(g))  # stable: first-seen order among equal sizes


#: The option that turns the rule's note into a refusal (named in the refusal's fix).
REQUIRE_SAME_OPTION = "--require-same-queries"


@dataclass(frozen=True)
class QuerySetGroups(Generic[T]):
    """Items grouped by the query set they were evaluated on (:func:`same_query_sets`).

    ``groups``: the items of each group, the largest group first; ``labels``: each group's
    query set (its :attr:`QuerySet.label`, after the task when there are tasks); ``names``:
    the names of each group's items.  One group: every item may be compared with every other.
    """

    groups: tuple
    labels: tuple
    names: tuple

    @property
    def mixed(self) -> bool:
        """Whether the items were evaluated on more than one query set."""
        return len(self.groups) > 1

    def __iter__(self):
        """The groups (each a tuple of items), as the list that grouped them was."""
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)

    def text(self) -> str:
        """``LABEL [name, name]; LABEL [name]``: each query set and the items evaluated on
        it."""
        return "; ".join(f"{label} [{', '.join(names)}]"
                         for label, names in zip(self.labels, self.names))

    def note(self, cell: Callable[[str], str] = str, *,
             so: str = "their figures are not comparable across sets") -> str:
        """The rule's note when the items are :attr:`mixed` (a sentence without its full
        stop); ``cell`` escapes the :meth:`text` for where it goes; ``so`` says what follows
        for the command (the leaderboard: each set is ranked on its own)."""
        return (f"the results were evaluated on {len(self.groups)} different query sets, so "
                f"{so}: {cell(self.text())}")

    def refusal(self) -> InputError:
        """The rule's error when the items must share one query set and do not."""
        return InputError(f"the results were evaluated on {len(self.groups)} different query "
                          f"sets, so they cannot be compared: {self.text()}",
                          fix="evaluate every model on the same queries (a full run, not a "
                              f"MTEB_STRATIFIED_MAX_QUERIES subset), or leave out "
                              f"{REQUIRE_SAME_OPTION} (each query set is then compared on its "
                              "own, never against another)")


def same_query_sets(items: Iterable[T], query_set: Callable[[T], QuerySet],
                    name: Callable[[T], str], *, task: Callable[[T], str] | None = None,
                    require_same: bool = False) -> QuerySetGroups:
    """The "same query set" rule: results are compared only when they were evaluated on the
    same query set.

    ``items`` are grouped by ``query_set(item)`` (:func:`group_by_query_set`: the largest group
    first).  With ``task`` (results of several tasks in one table, as in the leaderboard), one
    group when each task's items share one query set (an item that lacks a task still
    belongs), else one group per (task, query set).  ``require_same``: more than one group is
    refused (:meth:`QuerySetGroups.refusal`, an :class:`InputError`) instead.
    """
    items = list(items)
    if task is None:
        groups = group_by_query_set(items, key=query_set)
    else:
        sets: dict = {}
        for item in items:
            sets.setdefault(task(item), set()).add(query_set(item))
        groups = ([items] if all(len(s) == 1 for s in sets.values())
                  else group_by_query_set(items, key=lambda i: (task(i), query_set(i))))
    labels = tuple(query_set(g[0]).label if task is None
                   else f"{task(g[0])}: {query_set(g[0]).label}" for g in groups)
    out = QuerySetGroups(tuple(tuple(g) for g in groups), labels,
                         tuple(tuple(name(i) for i in g) for g in groups))
    if require_same and out.mixed:
        raise out.refusal()
    return out
