"""A sentence-transformers model as SpotlightRAG's token encoder (docs/python.md, "Your own
reader"; the transformers adapter's docs/engine.md section):

    import ragform
    from sentence_transformers import SentenceTransformer
    st = SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2", device="cpu")
    ragform.spotlight.select(record, encoder=ragform.readers.sentence_transformers(st), K=3)

ragform.spotlight.select's encoder= takes, besides word vectors, a ragform.Encoder, a Model and
any Python reader with hidden(prompt, layer) (the HiddenEncoder: one vector per returned piece,
each piece aligned to the text). This adapter is such a reader: hidden() returns the model's
word-piece final hidden states (the token_embeddings its pooling reads) grouped into words as
ragform's model encoder (--encoder model, src/pipelines/spotlight/model_encoder.cpp) groups them:
a word is a word-piece without the "##" prefix and its "##" continuations, [CLS]/[SEP]/[UNK]
close a word and are dropped, the word's vector is the sum of its pieces' (the pipeline
normalises it). Each word's piece is its text in the prompt (the tokenizer's offsets), so the
pipeline's alignment needs no case or accent matching; text the tokenizer drops (a no-break
space) is put at the front of the next word's piece.

Where it differs from ragform.Encoder on the same weights: transformers' BERT computes GELU with
erf, ragform's encoder with llama.cpp's tanh table (hidden states differ by ~1e-3); a word that
BERT's normaliser changes beyond case (accents stripped: "Beyoncé" -> "beyonce") is dropped by
ragform's encoder (it cannot find the piece text in the prompt) and kept here (its offsets say
where it is). Inputs longer than the model's max_seq_length lose their last word-pieces, as
sentence-transformers truncates (ragform.Encoder's default max_tokens is the same number when
the file records it). A Transformer module with do_lower_case=True (lowercasing before its
tokenizer) is refused.

Only the protocol's hidden is answered: generate raises (an encoder writes no text), so the
object serves where a pipeline takes an encoder (spotlight.select's encoder=), not as a reader of
prompts. torch is imported when hidden first runs.
"""
import numpy as np

from ._common import resolve

_C_SPACE = " \t\n\v\f\r"  # C's isspace, what the pipeline's alignment skips


class SentenceTransformersEncoder:
    """SpotlightRAG's token encoder over a SentenceTransformer whose first module is a
    transformers encoder (models.Transformer); see the module's docstring.

    layer: the hidden states read, whatever layer the pipeline asks for: -1 (default) the final
    ones (the model's token_embeddings), 0 the embeddings, i the output of block i; None follows
    the pipeline's layer= (spotlight.select's default is 1, a decoder's choice). words=False
    returns one vector per word-piece instead of per word."""

    chat_mode = "raw"

    def __init__(self, model, layer=-1, words=True, name=None, torch=None):
        self.model, self.layer, self.words = model, layer, words
        self._name = name
        self._torch_module = torch

    def describe(self):
        """sentence-transformers:<model name>#layer=<layer> (the run store's reader identity)."""
        name = self._name
        if name is None:
            cfg = getattr(self._auto_model(), "config", None)
            name = getattr(cfg, "_name_or_path", None) or type(self.model).__name__
        layer = "pipeline" if self.layer is None else self.layer
        return f"sentence-transformers:{name}#layer={layer}{'' if self.words else '#pieces'}"

    def generate(self, prompts, params):
        raise NotImplementedError(
            "ragform.readers.sentence_transformers is a token encoder (hidden states only): pass "
            "it as spotlight.select's encoder=, not as a reader that generates")

    def hidden(self, prompt, layer):
        """{states: [words, n_embd] float32, pieces: the words' text} (see the module's
        docstring); no ids, so the pipeline counts the words as the tokens."""
        torch, tok = self._torch, self.model.tokenizer
        if getattr(self._first(), "do_lower_case", False):
            # The module lowercases the text before its tokenizer: the offsets would be into
            # another string than the prompt.
            raise ValueError("sentence_transformers: a Transformer module with do_lower_case=True "
                             "is not supported (its tokenizer's own lowercasing is)")
        enc = tok(prompt, return_offsets_mapping=True, truncation=True,
                  max_length=self._max_length())
        ids = list(enc["input_ids"])
        feed = {"input_ids": torch.tensor([ids], device=self._device())}
        feed["attention_mask"] = torch.ones_like(feed["input_ids"])
        if "token_type_ids" in enc:
            feed["token_type_ids"] = torch.tensor([list(enc["token_type_ids"])],
                                                  device=self._device())
        want = self.layer if self.layer is not None else layer
        model = self._auto_model()
        with torch.no_grad():
            out = model(**feed, output_hidden_states=True)
        hs = out.hidden_states
        states = hs[resolve(want, len(hs))][0].float().cpu().numpy().astype(np.float64)
        groups = self._groups(tok.convert_ids_to_tokens(ids), enc["offset_mapping"],
                              set(tok.all_special_ids), ids)
        pieces, rows, at = [], [], 0
        for members, begin, end in groups:
            # Text the tokenizer dropped (a no-break space, a control character) joins this word:
            # the pipeline aligns a piece only across ASCII whitespace.
            text = prompt[at:end].lstrip(_C_SPACE)
            at = end
            if not text:
                continue
            pieces.append(text)
            rows.append(states[members].sum(axis=0))
        width = states.shape[1]
        out_states = np.asarray(rows, dtype=np.float32).reshape(len(rows), width)
        return {"states": out_states, "pieces": pieces}

    # ------------------------------------------------------------------ internals

    def _groups(self, tokens, offsets, special_ids, ids):
        """[(piece indices, begin, end)] per word (or per piece with words=False) in text order:
        ragform's model encoder's grouping (a "##" piece continues the open word; a special
        token closes it and is dropped)."""
        groups, open_word = [], False
        for i, (t, (b, e)) in enumerate(zip(tokens, offsets)):
            if ids[i] in special_ids or (len(t) >= 3 and t[0] == "[" and t[-1] == "]"
                                         and " " not in t):
                open_word = False
                continue
            cont = t.startswith("##") and len(t) > 2
            if self.words and cont and open_word:
                members, begin, _ = groups[-1]
                groups[-1] = (members + [i], begin, max(e, groups[-1][2]))
            else:
                groups.append(([i], b, e))
                open_word = True
        return groups

    @property
    def _torch(self):
        if self._torch_module is None:
            import torch
            self._torch_module = torch
        return self._torch_module

    def _first(self):
        try:
            return self.model[0]
        except (TypeError, IndexError, KeyError):
            return self.model

    def _auto_model(self):
        first = self._first()
        m = getattr(first, "auto_model", None) or getattr(first, "model", None)
        if m is None:
            raise TypeError("sentence_transformers: the model's first module has no transformers "
                            "model (auto_model): a Transformer module is needed")
        return m

    def _max_length(self):
        n = getattr(self.model, "max_seq_length", None)
        if n:
            return int(n)
        cfg = getattr(self._auto_model(), "config", None)
        return int(getattr(cfg, "max_position_embeddings", 512))

    def _device(self):
        d = getattr(self.model, "device", None)
        return d if d is not None else next(self._auto_model().parameters()).device


def sentence_transformers(model, layer=-1, words=True, name=None, torch=None):
    """SpotlightRAG's token encoder over a SentenceTransformer (SentenceTransformersEncoder): pass
    it as ragform.spotlight.select's encoder=."""
    return SentenceTransformersEncoder(model, layer=layer, words=words, name=name, torch=torch)
