// Random-weight BERT encoders of real shapes (`ragform make-test-model --arch bert --shape
// bge-small|bge-base`), for the encoder benchmark and tests: a complete llama.cpp `bert` file
// (bert.* hyper-parameters, pooling cls as BGE, token_types of 2 rows, position_embd,
// token_embd_norm, per layer q/k/v/output with biases, attn_output_norm, ffn_up/ffn_down with
// biases, layer_output_norm), and a WordPiece tokenizer: copied from --vocab-from (e.g. the
// fixture tiny-bert.gguf's bert-bge vocabulary), else a synthetic one of the shape's size.
// Weights as random_model.h: matrices N(0, 1/fan_in), norm weights 1 + N(0, 0.1^2), biases
// N(0, 0.5^2) (0.02 for the embeddings' tables, as BERT initialises them), each 64-row chunk
// seeded from (seed, tensor, chunk). Matrices take --type (a plain type; the llama-quantize
// mixtures map their base type), with tensor_type_fallback for row lengths the type cannot hold;
// position_embd and token_types stay F32. Built in memory (bge-base F32: 440 MB).
#pragma once
#include <string>
#include <vector>

#include "engine/model/random_model.h"

namespace ragform::model {

// bge-small (BAAI/bge-small-en-v1.5) and bge-base (BAAI/bge-base-en-v1.5), arch "bert".
const std::vector<ModelShape>& bert_shapes();
bool is_bert_shape(const std::string& name);

// write_random_model for arch bert (o.arch "bert" or a bert shape). Throws UsageError for a
// decoder shape or a bad option.
RandomModelSummary write_random_bert_model(const RandomModelOptions& o);

}  // namespace ragform::model
