"""Readers for the pipelines beyond ragform's own engine: any Python object with
generate(prompts, params) is a reader (the protocol: docs/python.md, "Your own reader"), passed
as reader= to every pipeline function. Adapters for the engines researchers run on GPUs:

    ragform.readers.transformers(model, tokenizer)   # generation, log-probs, attention, hidden
    ragform.readers.vllm(llm)                        # generation and prompt log-probs
    ragform.readers.sentence_transformers(st)        # SpotlightRAG's token encoder (encoder=)

No library is a dependency: each is imported when its reader first runs."""
from .. import _ragform
from .transformers import TransformersReader, transformers  # noqa: F811 (the module's name)
from .vllm import VLLMReader, vllm  # noqa: F811
from .sentence_transformers import (  # noqa: F811
    SentenceTransformersEncoder, sentence_transformers)

__all__ = ["as_reader", "transformers", "vllm", "sentence_transformers", "TransformersReader",
           "VLLMReader", "SentenceTransformersEncoder"]


def as_reader(obj):
    """A ragform.Reader over a protocol object, the conversion every pipeline function applies to
    its reader: its methods (score, attention, hidden, count_tokens, capabilities, description)
    answer as a Model's do, through the object. A ragform.Reader is returned as it is."""
    return _ragform._as_reader(obj)
