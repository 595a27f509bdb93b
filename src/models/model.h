#pragma once
// A benchmark model: a LibTorch module plus what the trainer needs to feed it
// (input kind and shape, class count). Architectures match torchvision's
// exactly: the same parameter names, shapes and order, so weights map
// one-to-one and parameter counts can be pinned in tests.
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "models/pipeline_split.h"
#include "models/tensor_parallel.h"
#include "models/units.h"

namespace dtbench::models {

enum class InputKind { kImage, kTokens, kVector };

struct ModelOptions {
  // Output classes of image and vector models. Default 1000.
  int64_t num_classes = 1000;
  // Transformer vocabulary (input ids and output logits). Default 30522 (BERT's).
  int64_t vocab = 30522;
  // Transformer: layers, width, heads, sequence length. Defaults: BERT-base-like.
  int64_t layers = 12;
  int64_t width = 768;
  int64_t heads = 12;
  int64_t seq_len = 128;
  // GPT: the learned position table's length (seq_len may not exceed it).
  // Default 1024 (GPT-2's).
  int64_t positions = 1024;
  // Llama: key/value heads of grouped-query attention (0 = heads: plain
  // multi-head attention). Presets: 8.
  int64_t kv_heads = 0;
  // Llama: the SwiGLU feed-forward's hidden width (0 = 3.5 x width, Llama 3
  // 8B's and 70B's; 405B's is 53248, 3.25 x width).
  int64_t ffn_hidden = 0;
  // MLP: input features and hidden width. Defaults 1024 / 1024.
  int64_t in_features = 1024;
  int64_t hidden = 1024;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual std::shared_ptr<torch::nn::Module> module() = 0;
  virtual torch::Tensor forward(const torch::Tensor& input) = 0;
  virtual InputKind input_kind() const = 0;
  // The training loss for integer class targets: cross-entropy of forward()
  // over the last dimension by default; models with auxiliary heads
  // (inception_v3) add theirs.
  virtual torch::Tensor training_loss(const torch::Tensor& input, const torch::Tensor& target);
  // The model's FSDP units (models/units.h); null for a model that is one unit.
  virtual UnitSeam* unit_seam() { return nullptr; }
  // Its tensor-parallel plan (models/tensor_parallel.h); null for a model
  // without one.
  virtual TpSeam* tp_seam() { return nullptr; }
  // Its pipeline split (models/pipeline_split.h); null for a model without one.
  virtual PpSeam* pp_seam() { return nullptr; }
};

// One FSDP unit of a decoder from its shapes: its parameter elements and
// forward multiply-adds for one sequence.
struct UnitShape {
  double param_elements = 0;
  double forward_macs = 0;
  // A block's parameter tensors (elements each, in the order forward uses
  // them): gradients
  // are bucketed tensor by tensor, never split. Empty: one tensor.
  std::vector<double> tensors;
  // The root: the elements of an untied LM head (Llama's output), whose
  // gradient backward makes first; 0 where the head is tied to the
  // embedding (GPT-2: that gradient is complete at the end of backward).
  double head_elements = 0;
};

struct ModelEntry {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<Model>(const ModelOptions&)> make;
  // Smallest square image the model accepts (image models). Default 8.
  int64_t min_image_size = 8;
  // What the model takes (what --channels-last applies to). Default images.
  InputKind input = InputKind::kImage;
  // The options the model is made with unless the user overrides them (a
  // GPT preset's layers, width, heads, vocabulary).
  ModelOptions defaults{};
  // Parameter elements from the shapes alone, without making the model
  // (`dtbench models` lists gpt2-xl's 1.56 billion without allocating 6 GB);
  // unset: count a made model's.
  std::function<int64_t(const ModelOptions&)> count_parameters;
  // Forward multiply-adds for one sequence of seq_len tokens from the shapes
  // alone (decoders); unset: count a made model's forward (train/flops).
  std::function<double(const ModelOptions&, int64_t seq_len)> forward_macs;
  // The FSDP units from the shapes alone (decoders), in forward order: the
  // root first (embeddings, final norm, head: its multiply-adds are the
  // head's), then one per block. They add up to count_parameters and
  // forward_macs. Unset: not known without making the model.
  std::function<std::vector<UnitShape>(const ModelOptions&, int64_t seq_len)> unit_shapes;
  // Why the model cannot be split `tp` ways by its tensor-parallel plan ("":
  // it can); unset: the model has no plan (tp_refusal says so).
  std::function<std::string(const ModelOptions&, int tp)> tp_refusal;
  // What --activation-checkpointing can recompute in it (models/checkpoint.h),
  // as its module's UnitSeam says once made: its units (full) and its
  // attention's core (selective).
  bool checkpoints_units = false;
  bool checkpoints_attention = false;
  // Whether its feed-forward width can be set (--ffn-hidden-size: Llama's).
  bool sets_ffn_hidden = false;
};

// Why `entry` cannot be trained with --activation-checkpointing `mode`
// ("none", "full" or "selective"); "" when it can.
std::string recompute_refusal(const ModelEntry& entry, const std::string& mode);

// Why `entry` with `opts` cannot run tensor-parallel `tp` ways; "" when it
// can (always at tp 1).
std::string tp_refusal(const ModelEntry& entry, const ModelOptions& opts, int tp);

// GPT-2's parameter elements from its shapes (models/gpt.h):
// vocab*w + positions*w + layers*(12w^2 + 13w) + 2w.
int64_t gpt_parameter_count(const ModelOptions& o);
// A GPT's forward multiply-adds for one sequence of `seq_len` tokens: per
// token the blocks' 12·layers·width² and the tied head's vocab·width
// weights, plus the attention products (QKᵀ and the weighted sum:
// 2·layers·width·seq_len). Six times this per token is the PaLM paper's
// 6N + 12·L·H·Q·T. Equal to train::measure_forward_cost's count (flops test).
double gpt_forward_macs(const ModelOptions& o, int64_t seq_len);

// gpt_forward_macs / gpt_parameter_count by unit (ModelEntry.unit_shapes).
std::vector<UnitShape> gpt_unit_shapes(const ModelOptions& o, int64_t seq_len);
// llama_forward_macs / llama_parameter_count by unit.
std::vector<UnitShape> llama_unit_shapes(const ModelOptions& o, int64_t seq_len);

// Llama's feed-forward hidden size: 3.5 x width (Llama 3 8B: 14336, 70B: 28672).
int64_t llama_ffn_hidden(int64_t width);
// A Llama's: o.ffn_hidden where set (405B: 53248), else 3.5 x o.width.
int64_t llama_ffn_hidden(const ModelOptions& o);
// Llama's parameter elements from its shapes (models/llama.h): embedding and
// untied head 2·vocab·w, per layer q/o 2w², k/v 2·w·kv_heads·head_dim, the
// SwiGLU 3·w·ffn and two RMSNorm scales 2w, the final norm w.
int64_t llama_parameter_count(const ModelOptions& o);
// Llama's forward multiply-adds for one sequence: per token every block's
// matmul weights and the head's vocab·w, plus the attention products
// (2·layers·width·seq_len: grouped-query heads still compute every query
// head's scores). Equal to train::measure_forward_cost's count (flops test).
double llama_forward_macs(const ModelOptions& o, int64_t seq_len);

// The entry named `name`; throws UsageError naming the valid models.
const ModelEntry& find_model(const std::string& name);

// Every model, in the order `dtbench models` lists them.
const std::vector<ModelEntry>& model_registry();

// Throws UsageError naming the valid models for an unknown name.
std::unique_ptr<Model> make_model(const std::string& name, const ModelOptions& opts);

// Helper for models whose module has a plain forward(Tensor).
template <typename Holder>
class ModuleModel : public Model {
 public:
  ModuleModel(Holder holder, InputKind kind) : holder_(std::move(holder)), kind_(kind) {}
  std::shared_ptr<torch::nn::Module> module() override { return holder_.ptr(); }
  torch::Tensor forward(const torch::Tensor& input) override { return holder_->forward(input); }
  InputKind input_kind() const override { return kind_; }
  UnitSeam* unit_seam() override {
    if constexpr (std::is_base_of_v<UnitSeam, typename Holder::ContainedType>)
      return holder_.get();
    else
      return nullptr;
  }
  TpSeam* tp_seam() override {
    if constexpr (std::is_base_of_v<TpSeam, typename Holder::ContainedType>)
      return holder_.get();
    else
      return nullptr;
  }
  PpSeam* pp_seam() override {
    if constexpr (std::is_base_of_v<PpSeam, typename Holder::ContainedType>)
      return holder_.get();
    else
      return nullptr;
  }

 private:
  Holder holder_;
  InputKind kind_;
};

}  // namespace dtbench::models
