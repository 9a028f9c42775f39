"""Corpus semantic structure: entities -> entity graph -> Leiden clusters -> artifact.

Layer: above :mod:`mteb_stratified.io` and :mod:`mteb_stratified.llm`, below stratification.
The pipeline (:mod:`.pipeline`) runs named steps, one module each (extraction, vocabulary,
linking, clustering, describe); the document map's tree (leaves, topics, coarser levels) is
:mod:`.levels`, and what each of its units is about (terms, label, central titles)
:mod:`.terms`; extractors honour :class:`EntityExtractor` and are found by name
in :mod:`.registry`; :mod:`.artifact` saves and loads the result, read-only data; the extractor
of queries is built from an artifact and the user's inputs by :func:`query_extractor`
(:mod:`.query_entities`).

Heavy dependencies (spaCy, sentence-transformers, faiss, igraph, leidenalg, scikit-learn,
openai) are imported
lazily; install them with ``pip install mteb-stratified[structure]`` (``[llm]`` for the LLM
extractor).
"""

from .artifact import StructureArtifact
from .extractors import Entity, EntityExtractor
from .fingerprint import corpus_fingerprint
from .leiden import LeidenClustering
from .pipeline import StructureConfig, build_structure
from .query_entities import QueryReader, embedding_model_of, query_extractor

__all__ = ["StructureArtifact", "Entity", "EntityExtractor", "LeidenClustering",
           "StructureConfig", "build_structure", "corpus_fingerprint", "query_extractor",
           "embedding_model_of", "QueryReader"]
