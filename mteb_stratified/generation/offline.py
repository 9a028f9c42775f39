"""The offline writer, judge and verifier: coverage-aware generation with no LLM, no network.

They honour the protocols of :mod:`.protocols` and use only NLP the corpus structure already has:
its extractor and entities, its stored abbreviations and stop-entities, the packaged MiniLM
(``all-MiniLM-L6-v2``) for entity *names*, and BM25 through the loop's pooler.  Every choice
is seeded or ordered by a fixed key, so a seed gives the same queries on every run.
Our rules (offline rule version :data:`OFFLINE_VERSION`; the paper describes no offline path):

* **entity neighbours** — the clustered entities' names embedded with the structure's model;
  f is a *neighbour* of e when cos(e, f) ≥ τ, τ the structure's similarity-graph threshold
  (``parameters.threshold``, 0.6: the edge rule of the entity graph, which the artifact does
  not store, applied to the names alone, with no k limit — embedding every entity with its
  description would take minutes on a laptop), or when f is in e's cluster (a community of the
  graph: linked to e through its edges); neighbours are ranked by the cosine.  A neighbour is
  a related name — a synonym, a spelling, or a broader or nearby concept ("tumour" for
  "tumor", "pet" for "cat").
* **writer** (:class:`OfflineQueryWriter`), by the rank of the target's J bin; the seed
  documents' entities are S = ∪ E(seed):

  - *High J*: ``n_entities`` (2; at least 2, so the judge's containment rule has two
    concepts to check) of the seeds' own clustered entities (those carried by more seeds
    first, then the loop's order of terms: the target cluster's, then by centrality), no two
    sharing a word;
  - *Low J*: each of those replaced by its nearest neighbour that is in no seed document
    (another vocabulary for the same concept), so no query entity is in S;
  - *Mid J*: own and replaced entities mixed so that J computed over the seeds falls in the
    Mid bin (the corpus' stored cut-points); with few seeds no mix may, and the writer declines;
  - *N/A J* (a query without entities): not aimed at — an entity-free query is not built
    offline (:attr:`OfflineQueryWriter.alignment_ranks` lists the levels it aims at).

  The entities are set in a short template (:data:`TEMPLATES`, order drawn with
  ``default_rng([seed, cluster, Δ bin, J bin, key of the seed set])``); a phrasing is kept only
  if the
  structure's own extractor finds exactly the intended entities in it (else the next one).
* **judge** (:class:`OfflineJudge`): a seed document is a positive, grade 2 (rule ``seed``, as
  in GenQ and InPars); any other pooled document d gets grade 1 when d carries every query
  entity, E(q) ⊆ E(d), else 0 (rule ``entity-containment``).  Each qrel records the rule that
  judged it.  The rule reads the same E(d) that J does: a document it adds carries the whole
  query, so it raises J, and a Low-J query is only accepted with its seeds alone as qrels —
  how complete the judgments are differs by J level by design.
* **verifier** (:class:`OfflineVerifier`) — every check is recorded with its reason:

  - *well-formed*: 3 to 24 words; at least one entity found by the structure's extractor; no
    content word repeated (function words such as "of", "and" may); not a copy of a relevant
    document's title;
  - *answerable*: every query entity is carried by a relevant document, or is a neighbour
    (cos ≥ τ) of a graph entity (a clustered one) a relevant document carries: the relevant
    documents cover each concept the query asks about.  This re-checks the writer's
    construction on the extracted entities (it catches a phrasing that re-extracts otherwise);
    it does not establish relevance — the cell check and the recorded BM25 rank below are the
    independent signals;
  - *retrievable* (recorded, not required): the best rank of a relevant document in the
    query's BM25 top k.

What these queries are good for: filling empty strata so that stratified estimates and coverage
can be measured.  What they are not: human or strong-LLM relevance judgments — the judge is a
lexical-concept rule, and a query is a template around entity names.  Their provenance says
``offline-synthetic``.
"""

from __future__ import annotations

import hashlib
import os
from typing import Sequence

import numpy as np

from ..core.stats.strata import soft_containment
from .candidates import normalize_query

__all__ = ["OFFLINE_VERSION", "OFFLINE_KIND", "EntityNeighbours", "OfflineQueryWriter",
           "OfflineJudge", "OfflineVerifier", "offline_parts"]

OFFLINE_VERSION = "offline-v1"
#: The provenance kind of every offline part (and so of every query they make).
OFFLINE_KIND = "offline-synthetic"

#: Templates around 1–4 entities ({0}, {1}, ...); ``{rest}`` joins the others with "and".
TEMPLATES = {
    1: ("what is known about {0}", "{0} and health", "effects of {0}", "role of {0}",
        "health effects of {0}"),
    2: ("{0} and {1}", "effect of {0} on {1}", "role of {0} in {1}", "{0} in {1}",
        "link between {0} and {1}", "does {0} affect {1}"),
    3: ("{0}, {1} and {2}", "effect of {0} on {1} and {2}", "{0} and {1} in {2}",
        "role of {0} in {1} and {2}"),
    4: ("{0}, {1}, {2} and {3}", "effect of {0} and {1} on {2} and {3}"),
}


class EntityNeighbours:
    """Unit embeddings of the structure's clustered entity names, for neighbour lookups.

    Cached as ``offline-names-<key>.npy`` in ``cache_dir`` (key: model and names);
    ``show_progress``: a bar while they are computed.
    """

    def __init__(self, artifact, *, threshold: float | None = None, cache_dir=None,
                 model: str | None = None, show_progress: bool = False):
        from ..structure.embed import cached_array, embed_with, entity_embedding_of
        clustered = {e["name"]: int(e["cluster"]) for e in artifact.entities
                     if int(e["cluster"]) >= 0}
        self.names = sorted(clustered)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.cluster = np.array([clustered[n] for n in self.names], dtype=np.int64)
        params = artifact.metadata.get("parameters", {})
        self.threshold = float(params.get("threshold", 0.6) if threshold is None else threshold)
        self.model = model
        self.method = entity_embedding_of(artifact)  # as the structure embedded its names
        key = hashlib.sha256(repr((model, self.names) if self.method == "model" else
                                  (model, self.method, self.names)).encode()).hexdigest()[:16]
        path = os.path.join(cache_dir, f"offline-names-{key}.npy") if cache_dir else None
        if cache_dir:
            os.makedirs(cache_dir, exist_ok=True)
        self.emb = cached_array(path, lambda: embed_with(
            self.names, model, self.method, batch_size=256, show_progress=show_progress,
            desc="offline: embed the entity names"))
        self._extra: dict = {}

    def vector(self, name: str) -> np.ndarray:
        return self.vectors([name])[0]

    def vectors(self, names: Sequence[str]) -> np.ndarray:
        """Unit rows for ``names``: stored ones, and the others embedded in one batch (memo)."""
        missing = sorted({n for n in names if n not in self.index and n not in self._extra})
        if missing:
            from ..structure.embed import embed_with
            self._extra.update(zip(missing, embed_with(missing, self.model, self.method)))
        return np.stack([self.emb[self.index[n]] if n in self.index else self._extra[n]
                         for n in names]) if names else np.zeros((0, self.emb.shape[1]))

    def _linked(self, name: str, sims: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Which ``rows`` are neighbours of ``name``: cos ≥ τ, or the same cluster (a community
        of the graph: linked to it through edges)."""
        near = sims >= self.threshold
        i = self.index.get(name)
        if i is not None:
            near |= self.cluster[rows] == self.cluster[i]
        return near

    def nearest(self, name: str, exclude=(), k: int = 3) -> list[str]:
        """Up to ``k`` neighbours of ``name``, nearest (by cos) first, ties by name; none of
        them in ``exclude`` and none a word-for-word part of ``name`` or the reverse."""
        sims = self.emb @ self.vector(name)
        rows = np.arange(sims.size)
        near = self._linked(name, sims, rows)
        order = rows[near][np.lexsort((rows[near], -sims[near]))]
        out = []
        exclude = set(exclude)
        for i in order:
            if len(out) >= k:
                break
            cand = self.names[i]
            if cand == name or cand in exclude or _overlaps(cand, name):
                continue
            out.append(cand)
        return out

    def matched(self, name: str, others: Sequence[str]) -> str | None:
        """The first of ``others`` equal to ``name``, else the nearest of them (by cos) that is a
        node of the graph and a neighbour of ``name``, else None."""
        if name in others:
            return name
        nodes = sorted(o for o in set(others) if o in self.index)
        if not nodes:
            return None
        rows = np.array([self.index[o] for o in nodes], dtype=np.int64)
        sims = self.emb[rows] @ self.vector(name)
        near = self._linked(name, sims, rows)
        if not near.any():
            return None
        sims = np.where(near, sims, -np.inf)
        return nodes[int(np.argmax(sims))]


def _overlaps(a: str, b: str) -> bool:
    """One name's words are all in the other's ("bone density" / "bone mineral density",
    "vitamin d" / "vitamin d supplement"): such a swap would keep the same words."""
    wa, wb = set(a.split()), set(b.split())
    return wa <= wb or wb <= wa


class _Entities:
    """The structure's extractor on query texts, memoised (writer, judge and verifier share it)."""

    def __init__(self, artifact):
        self.artifact = artifact
        self.memo: dict = {}

    def __call__(self, text: str) -> frozenset:
        if text not in self.memo:
            self.memo[text] = frozenset(self.artifact.extract_entities(text))
        return self.memo[text]


class OfflineQueryWriter:
    """Builds a query for a target cell from the seeds' entities (module docstring)."""

    #: no query for a cell is a decline (the rules cannot reach it), not a failed answer
    declines = True

    def __init__(self, artifact, neighbours: EntityNeighbours, *, seed: int = 0,
                 n_entities: int = 2, n_seeds: int = 2, entities: _Entities | None = None):
        from ..stratification import corpus_bins
        self.artifact, self.neighbours, self.seed = artifact, neighbours, int(seed)
        self.n_entities, self.n_seeds = int(n_entities), max(int(n_seeds), 2)
        self.entities = entities or _Entities(artifact)
        self.bins = corpus_bins(artifact)
        self.doc_entities = artifact.canonical_doc_entities()
        self.clustered = set(neighbours.names)

    @property
    def alignment_ranks(self) -> tuple:
        """The J levels this writer aims at: High and Low, and Mid when some J over at most
        ``n_seeds`` seeds and 2 to ``n_entities`` entities, h / (n · m) with 0 < h < n · m, is
        in a Mid bin (on NFCorpus, Mid is 0 < J ≤ 0.073: with 2 seeds and 2 entities it is
        not)."""
        grid = self.bins.grid
        values = [h / (n * m) for n in range(1, self.n_seeds + 1)
                  for m in range(2, min(self.n_entities, 4) + 1) for h in range(1, n * m)]
        bins = self.bins.bin_alignment(values) if values else []
        mid = any(grid.rank("alignment", grid.level("alignment", int(b))) == "mid" for b in bins)
        return ("high", "mid", "low") if mid else ("high", "low")

    def params(self) -> dict:
        return {"kind": OFFLINE_KIND, "version": OFFLINE_VERSION, "part": "writer",
                "n_entities": self.n_entities, "alignment_ranks": list(self.alignment_ranks),
                "neighbour_threshold": self.neighbours.threshold,
                "names_model": self.neighbours.model or "all-MiniLM-L6-v2 (packaged)"}

    def _own(self, seed_ids, terms) -> list[str]:
        """The seeds' clustered entities: the loop's order (target cluster, centrality), those
        carried by more seeds first."""
        sets = [self.doc_entities.get(d, set()) for d in seed_ids]
        ranked = [t for t in terms if t in self.clustered]
        extra = sorted(n for s in sets for n in s if n in self.clustered and n not in ranked)
        ranked += list(dict.fromkeys(extra))
        order = {n: i for i, n in enumerate(ranked)}
        ranked.sort(key=lambda n: (-sum(n in s for s in sets), order[n]))
        out: list = []
        for n in ranked:  # no two share a word: "natural killer" / "natural killer cell"
            if not any(set(n.split()) & set(m.split()) for m in out):
                out.append(n)
        return out

    def _swap(self, names, avoid) -> list[str] | None:
        """Each name replaced by its nearest neighbour outside ``avoid`` (None if one has none)."""
        out: list = []
        for n in names:
            near = self.neighbours.nearest(n, exclude=set(avoid) | set(out), k=1)
            if not near:
                return None
            out.append(near[0])
        return out

    def _mixes(self, rank: str, own: list[str], avoid: set, sets) -> list[list[str]]:
        """Entity lists to try for the J rank, best first (at most 4 entities: the templates)."""
        k = min(self.n_entities, len(own), 4)
        if rank == "high":
            return [own[:m] for m in range(k, 1, -1)]
        swaps = [self._swap(own[:m], avoid) for m in range(k, 1, -1)]
        if rank == "low":
            return [x for x in swaps if x]
        # mid: one to three own entities and swaps of the others, J over the seeds in the bin
        out = []
        grid = self.bins.grid
        for n_own in range(1, k):
            swapped = self._swap(own[n_own:k], avoid)
            if not swapped:
                continue
            mix = own[:n_own] + swapped
            j = soft_containment(mix, sets, None, 1.0)  # the exact J over the seeds
            level = grid.level("alignment", int(self.bins.bin_alignment([j])[0]))
            if grid.rank("alignment", level) == "mid":
                out.append(mix)
        return out

    def write(self, target, seed_docs: Sequence[tuple[str, str]], terms: Sequence[str] = ()):
        """``(query or None, what was done)``: None when no phrasing lands (a decline)."""
        seed_ids = [d for d, _ in seed_docs]
        rank = target.rank("alignment")
        if rank == "na":
            return None, "declined: an entity-free query (J N/A) is not built offline"
        sets = [self.doc_entities.get(d, set()) for d in seed_ids]
        avoid = set().union(*sets)
        own = self._own(seed_ids, terms)
        if not own:
            return None, "declined: the seeds carry no clustered entity"
        grid = self.bins.grid
        rng = np.random.default_rng([self.seed, int(target.cluster),
                                     grid.index("dispersion", target.dispersion),
                                     grid.index("alignment", target.alignment),
                                     _seed_set_key(seed_ids)])
        titles = _titles(seed_docs)
        mixes = self._mixes(rank, own, avoid, sets)
        if not mixes:
            return None, (f"declined: no {rank}-J entity mix (no graph neighbour outside the "
                          "seeds, or no mix whose J over them is in the bin)")
        for mix in mixes:
            forms = TEMPLATES[len(mix)]
            for t in rng.permutation(len(forms)):
                text = forms[int(t)].format(*mix)
                if self.entities(text) == frozenset(mix) and normalize_query(text) not in titles:
                    return text, (f"{OFFLINE_VERSION} {rank} J: entities {mix}, "
                                  f"template {int(t)} of {len(forms)}")
        return None, f"declined: no phrasing of the {rank}-J entity mixes re-extracts as built"


def _titles(docs: Sequence[tuple[str, str]]) -> set:
    """The documents' titles (the text before the first ". " of ``title. text``), normalised."""
    return {normalize_query(t.split(". ")[0]) for _, t in docs}


def _seed_set_key(seed_ids) -> int:
    """A stable number of the seed set (a new seed set draws its templates anew)."""
    return int(hashlib.sha256("\x1f".join(sorted(seed_ids)).encode()).hexdigest()[:8], 16)


class OfflineJudge:
    """Seeds grade 2; other pooled documents 1 when they carry every query entity, else 0
    (module docstring)."""

    RULE_SEED = "seed"
    RULE_POOL = "entity-containment"

    def __init__(self, artifact, *, entities: _Entities | None = None):
        self.entities = entities or _Entities(artifact)
        self.doc_entities = artifact.canonical_doc_entities()

    def params(self) -> dict:
        return {"kind": OFFLINE_KIND, "version": OFFLINE_VERSION, "part": "judge",
                "rule": f"{self.RULE_SEED} (grade 2) / {self.RULE_POOL} (grade 1 when the "
                        "document carries every query entity, else 0)"}

    def judge(self, query: str, docs: Sequence[tuple[str, str]], seeds=()) -> dict:
        ents = self.entities(query)
        seeds = set(seeds)
        out = {}
        for d, _ in docs:
            if d in seeds:
                out[d] = (2, self.RULE_SEED)
            else:
                carries = bool(ents) and ents <= self.doc_entities.get(d, set())
                out[d] = (1 if carries else 0, self.RULE_POOL)
        return out


class OfflineVerifier:
    """Well-formed and answerable by recorded rules (module docstring)."""

    MIN_WORDS, MAX_WORDS, RETRIEVAL_K = 3, 24, 10

    def __init__(self, artifact, neighbours: EntityNeighbours, pooler, *,
                 entities: _Entities | None = None):
        self.neighbours, self.pooler = neighbours, pooler
        self.entities = entities or _Entities(artifact)
        self.doc_entities = artifact.canonical_doc_entities()

    def params(self) -> dict:
        return {"kind": OFFLINE_KIND, "version": OFFLINE_VERSION, "part": "verifier",
                "words": [self.MIN_WORDS, self.MAX_WORDS],
                "neighbour_threshold": self.neighbours.threshold,
                "retrieval_k": self.RETRIEVAL_K}

    def verify(self, query: str, docs: Sequence[tuple[str, str]], context=None) -> dict:
        context = context or {}
        words = query.lower().split()
        content = [w.strip(",?") for w in words if w.strip(",?") not in _FUNCTION_WORDS]
        ents = sorted(self.entities(query))
        rel = [d for d, _ in docs]
        untitled = normalize_query(query) not in _titles(docs)
        checks = [
            _check("length", self.MIN_WORDS <= len(words) <= self.MAX_WORDS,
                   f"{len(words)} words (allowed {self.MIN_WORDS}–{self.MAX_WORDS})"),
            _check("has_entity", bool(ents), f"extracted entities {ents}"),
            _check("no_repeated_word", len(set(content)) == len(content),
                   "every content word once" if len(set(content)) == len(content)
                   else "a content word repeats"),
            _check("not_a_title", untitled, "differs from every relevant document's title"
                   if untitled else "copies a title"),
        ]
        carried = set().union(*(self.doc_entities.get(d, set()) for d in rel)) if rel else set()
        self.neighbours.vectors(ents)  # the query's entities outside the graph: one batch
        found = {e: self.neighbours.matched(e, carried) for e in ents}
        missing = sorted(e for e, m in found.items() if m is None)
        answerable = [_check("concepts_covered", bool(ents) and not missing,
                             f"every query entity carried by a relevant document or a neighbour "
                             f"of one ({ {e: m for e, m in sorted(found.items())} })"
                             if not missing else f"not covered: {missing}")]
        ranks = []
        if self.pooler is not None:
            top = self.pooler.bm25_top(query, self.RETRIEVAL_K)
            ranks = [top.index(d) + 1 for d in rel if d in top]
        retrieval = {"check": "retrievable", "required": False,
                     "best_bm25_rank": min(ranks) if ranks else None,
                     "reason": f"best rank of a relevant document in the BM25 top "
                               f"{self.RETRIEVAL_K}: {min(ranks) if ranks else 'none'}"}
        return {"well_formed": all(c["passed"] for c in checks),
                "answerable": all(c["passed"] for c in answerable),
                "checks": checks + answerable + [retrieval]}


#: Words a query may repeat (the no-repeated-word check counts the others).
_FUNCTION_WORDS = frozenset("a an and are as at by does for from how in is it of on or the to "
                            "what which with".split())


def _check(name: str, passed: bool, reason: str) -> dict:
    return {"check": name, "passed": bool(passed), "reason": reason}


def offline_parts(artifact, pooler, *, seed: int = 0, n_seeds: int = 2, cache_dir=None,
                  model=None, show_progress: bool = False):
    """``(writer, judge, verifier)`` of the offline path, sharing one neighbour index and one
    memo of the extractor (``show_progress``: a bar while the names are embedded)."""
    neighbours = EntityNeighbours(artifact, cache_dir=cache_dir, model=model,
                                  show_progress=show_progress)
    ents = _Entities(artifact)
    return (OfflineQueryWriter(artifact, neighbours, seed=seed, n_seeds=n_seeds, entities=ents),
            OfflineJudge(artifact, entities=ents),
            OfflineVerifier(artifact, neighbours, pooler, entities=ents))
