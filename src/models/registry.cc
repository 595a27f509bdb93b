#include <fmt/format.h>
#include <torch/nn/functional/loss.h>

#include "core/error.h"
#include "models/gpt.h"
#include "models/inception.h"
#include "models/llama.h"
#include "models/mlp.h"
#include "models/model.h"
#include "models/resnet.h"
#include "models/transformer.h"
#include "models/vgg_alexnet.h"

namespace dtbench::models {
namespace {

// An entry without shape formulas (count_parameters, forward_macs and
// unit_shapes unset: counted on a made model).
ModelEntry entry(std::string name, std::string description,
                 std::function<std::unique_ptr<Model>(const ModelOptions&)> make, int64_t min_image_size = 8,
                 InputKind input = InputKind::kImage) {
  ModelEntry e;
  e.name = std::move(name);
  e.description = std::move(description);
  e.make = std::move(make);
  e.min_image_size = min_image_size;
  e.input = input;
  return e;
}

ModelEntry resnet_entry(const std::string& name, const std::string& description) {
  auto e = entry(name, description, [name](const ModelOptions& o) -> std::unique_ptr<Model> {
    return std::make_unique<ModuleModel<ResNet>>(ResNet(resnet_config(name, o.num_classes)), InputKind::kImage);
  });
  e.checkpoints_units = true;
  return e;
}

// A GPT-2 size: Hugging Face's configurations (vocabulary 50257, 1024
// positions, feed-forward 4 x width).
ModelEntry gpt_entry(const std::string& name, int64_t layers, int64_t width, int64_t heads,
                     const std::string& size) {
  ModelEntry e;
  e.name = name;
  e.description = fmt::format("GPT-2 {} (decoder-only, causal attention, tied head: {} layers, width {}, "
                              "{} heads, vocabulary 50257, 1024 positions)",
                              size, layers, width, heads);
  e.make = [](const ModelOptions& o) -> std::unique_ptr<Model> {
    return std::make_unique<ModuleModel<Gpt>>(Gpt(o), InputKind::kTokens);
  };
  e.input = InputKind::kTokens;
  e.defaults.layers = layers;
  e.defaults.width = width;
  e.defaults.heads = heads;
  e.defaults.vocab = 50257;
  e.defaults.positions = 1024;
  e.count_parameters = gpt_parameter_count;
  e.forward_macs = gpt_forward_macs;
  e.unit_shapes = gpt_unit_shapes;
  e.tp_refusal = gpt_tp_refusal;
  e.checkpoints_units = e.checkpoints_attention = true;
  return e;
}

// A Llama 3 size: Meta's configurations (vocabulary 128256, 8 key/value
// heads, feed-forward 3.5 x width, untied head).
ModelEntry llama_entry(const std::string& name, int64_t layers, int64_t width, int64_t heads,
                       const std::string& size, int64_t ffn_hidden = 0) {
  ModelEntry e;
  e.name = name;
  e.description = fmt::format("Llama 3 {} (RMSNorm, SwiGLU, rotary positions, grouped-query attention: "
                              "{} layers, width {}, {} heads, 8 key/value heads, feed-forward {}, "
                              "vocabulary 128256, untied head)",
                              size, layers, width, heads, ffn_hidden > 0 ? ffn_hidden : llama_ffn_hidden(width));
  e.defaults.ffn_hidden = ffn_hidden;
  e.sets_ffn_hidden = true;
  e.make = [](const ModelOptions& o) -> std::unique_ptr<Model> {
    return std::make_unique<ModuleModel<Llama>>(Llama(o), InputKind::kTokens);
  };
  e.input = InputKind::kTokens;
  e.defaults.layers = layers;
  e.defaults.width = width;
  e.defaults.heads = heads;
  e.defaults.kv_heads = 8;
  e.defaults.vocab = 128256;
  e.count_parameters = llama_parameter_count;
  e.forward_macs = llama_forward_macs;
  e.unit_shapes = llama_unit_shapes;
  e.tp_refusal = llama_tp_refusal;
  e.checkpoints_units = e.checkpoints_attention = true;
  return e;
}

int64_t kv_width(const ModelOptions& o) {
  return (o.kv_heads > 0 ? o.kv_heads : o.heads) * (o.width / o.heads);
}

}  // namespace

std::string recompute_refusal(const ModelEntry& entry, const std::string& mode) {
  if (mode == "full" && !entry.checkpoints_units)
    return fmt::format("--activation-checkpointing full: {} has no blocks to checkpoint (the gpt, llama, "
                       "resnet and mlp models have)", entry.name);
  if (mode == "selective" && !entry.checkpoints_attention)
    return fmt::format("--activation-checkpointing selective recomputes attention's core: {} has no attention "
                       "(the gpt and llama models have; full checkpoints whole blocks)", entry.name);
  return "";
}

std::string tp_refusal(const ModelEntry& entry, const ModelOptions& opts, int tp) {
  if (tp == 1) return "";
  if (!entry.tp_refusal) return fmt::format("--tp {}: {} has no tensor-parallel plan (gpt and llama models have)", tp, entry.name);
  return entry.tp_refusal(opts, tp);
}

int64_t gpt_parameter_count(const ModelOptions& o) {
  const int64_t c = o.width;
  // wte + wpe + per block (2 LayerNorms, c_attn, attn c_proj, c_fc, mlp c_proj) + ln_f.
  return o.vocab * c + o.positions * c + o.layers * (12 * c * c + 13 * c) + 2 * c;
}

double gpt_forward_macs(const ModelOptions& o, int64_t seq_len) {
  const double l = static_cast<double>(o.layers), w = static_cast<double>(o.width),
               t = static_cast<double>(seq_len);
  const double weights = 12 * l * w * w + static_cast<double>(o.vocab) * w;
  return t * weights + 2 * l * w * t * t;
}

int64_t llama_ffn_hidden(int64_t width) { return width * 7 / 2; }
int64_t llama_ffn_hidden(const ModelOptions& o) { return o.ffn_hidden > 0 ? o.ffn_hidden : llama_ffn_hidden(o.width); }

int64_t llama_parameter_count(const ModelOptions& o) {
  const int64_t w = o.width, f = llama_ffn_hidden(o);
  return 2 * o.vocab * w + o.layers * (2 * w * w + 2 * w * kv_width(o) + 3 * w * f + 2 * w) + w;
}

double llama_forward_macs(const ModelOptions& o, int64_t seq_len) {
  const double l = static_cast<double>(o.layers), w = static_cast<double>(o.width),
               t = static_cast<double>(seq_len), kv = static_cast<double>(kv_width(o)),
               f = static_cast<double>(llama_ffn_hidden(o));
  const double weights = l * (2 * w * w + 2 * w * kv + 3 * w * f) + static_cast<double>(o.vocab) * w;
  return t * weights + 2 * l * w * t * t;
}

namespace {

// The root (its elements, the head's multiply-adds and an untied head's
// elements) and `layers` equal blocks of `tensors`.
std::vector<UnitShape> root_and_blocks(double root_elements, double head_macs, double head_elements,
                                       int64_t layers, const std::vector<double>& tensors, double block_macs) {
  double block_elements = 0;
  for (double t : tensors) block_elements += t;
  std::vector<UnitShape> out{{root_elements, head_macs, {}, head_elements}};
  for (int64_t l = 0; l < layers; ++l) out.push_back({block_elements, block_macs, tensors, 0});
  return out;
}

}  // namespace

std::vector<UnitShape> gpt_unit_shapes(const ModelOptions& o, int64_t seq_len) {
  const double c = static_cast<double>(o.width), t = static_cast<double>(seq_len);
  const double v = static_cast<double>(o.vocab), pos = static_cast<double>(o.positions);
  // wte (tied with the head) + wpe + ln_f; a block: 12c^2 + 13c, as
  // ln_1, c_attn, attn c_proj, ln_2, c_fc, mlp c_proj (weights, biases).
  const std::vector<double> block{c, c, 3 * c * c, 3 * c, c * c, c, c, c, 4 * c * c, 4 * c, 4 * c * c, c};
  return root_and_blocks(v * c + pos * c + 2 * c, t * v * c, 0, o.layers, block, t * 12 * c * c + 2 * c * t * t);
}

std::vector<UnitShape> llama_unit_shapes(const ModelOptions& o, int64_t seq_len) {
  const double w = static_cast<double>(o.width), t = static_cast<double>(seq_len),
               kv = static_cast<double>(kv_width(o)), f = static_cast<double>(llama_ffn_hidden(o)),
               v = static_cast<double>(o.vocab);
  const double weights = 2 * w * w + 2 * w * kv + 3 * w * f;
  // Embedding + untied head + final norm; a block: input norm, q, k, v, o,
  // post-attention norm, gate, up, down.
  const std::vector<double> block{w, w * w, w * kv, w * kv, w * w, w, w * f, w * f, w * f};
  return root_and_blocks(2 * v * w + w, t * v * w, v * w, o.layers, block, t * weights + 2 * w * t * t);
}

const std::vector<ModelEntry>& model_registry() {
  static const std::vector<ModelEntry> entries = [] {
    std::vector<ModelEntry> e;
    e.push_back(resnet_entry("resnet18", "ResNet-18 (BasicBlock [2,2,2,2])"));
    e.push_back(resnet_entry("resnet34", "ResNet-34 (BasicBlock [3,4,6,3])"));
    e.push_back(resnet_entry("resnet50", "ResNet-50 (Bottleneck [3,4,6,3])"));
    e.push_back(resnet_entry("resnet101", "ResNet-101 (Bottleneck [3,4,23,3])"));
    e.push_back(resnet_entry("resnet152", "ResNet-152 (Bottleneck [3,8,36,3])"));
    e.push_back(resnet_entry("resnext50_32x4d", "ResNeXt-50 32x4d"));
    e.push_back(resnet_entry("resnext101_32x8d", "ResNeXt-101 32x8d"));
    e.push_back(resnet_entry("wide_resnet50_2", "Wide ResNet-50-2"));
    e.push_back(entry("vgg16", "VGG-16 (configuration D, no batch norm)",
                 [](const ModelOptions& o) -> std::unique_ptr<Model> {
                   return std::make_unique<ModuleModel<VggAlex>>(VggAlex(true, o.num_classes),
                                                                 InputKind::kImage);
                 }));
    e.push_back(entry("alexnet", "AlexNet (torchvision variant)",
                 [](const ModelOptions& o) -> std::unique_ptr<Model> {
                   return std::make_unique<ModuleModel<VggAlex>>(VggAlex(false, o.num_classes),
                                                                 InputKind::kImage);
                 }));
    e.push_back(entry("inception_v3", "Inception v3 (with the auxiliary classifier; trains on images >= 299x299)",
                 [](const ModelOptions& o) { return make_inception_v3(o.num_classes); },
                 kInceptionMinTrainImage));
    e.push_back(entry("transformer",
                 "Transformer-encoder LM (BERT-base-like: 12 layers, width 768, 12 heads, "
                 "vocabulary 30522, untied head)",
                 [](const ModelOptions& o) -> std::unique_ptr<Model> {
                   return std::make_unique<ModuleModel<TransformerLm>>(TransformerLm(o),
                                                                       InputKind::kTokens);
                 },
                 8, InputKind::kTokens));
    e.push_back(gpt_entry("gpt2", 12, 768, 12, "small"));
    e.push_back(gpt_entry("gpt2-medium", 24, 1024, 16, "medium"));
    e.push_back(gpt_entry("gpt2-large", 36, 1280, 20, "large"));
    e.push_back(gpt_entry("gpt2-xl", 48, 1600, 25, "XL"));
    e.push_back(llama_entry("llama3-8b", 32, 4096, 32, "8B (3.1)"));
    e.push_back(llama_entry("llama3-70b", 80, 8192, 64, "70B (3.1)"));
    e.push_back(llama_entry("llama3-405b", 126, 16384, 128, "405B (3.1)", 53248));
    e.push_back(entry("mlp", "3-layer MLP (in -> hidden -> hidden -> classes), no batch norm",
                 [](const ModelOptions& o) -> std::unique_ptr<Model> {
                   return std::make_unique<ModuleModel<Mlp>>(
                       Mlp(o.in_features, o.hidden, o.num_classes), InputKind::kVector);
                 },
                 8, InputKind::kVector));
    e.back().checkpoints_units = true;
    return e;
  }();
  return entries;
}

const ModelEntry& find_model(const std::string& name) {
  std::string valid;
  for (const auto& e : model_registry()) {
    if (e.name == name) return e;
    valid += (valid.empty() ? "" : ", ") + e.name;
  }
  throw UsageError(fmt::format("unknown model '{}' (valid: {})", name, valid));
}

std::unique_ptr<Model> make_model(const std::string& name, const ModelOptions& opts) {
  return find_model(name).make(opts);
}

torch::Tensor Model::training_loss(const torch::Tensor& input, const torch::Tensor& target) {
  auto out = forward(input);
  return torch::nn::functional::cross_entropy(out.reshape({-1, out.size(-1)}), target.reshape({-1}));
}

}  // namespace dtbench::models
