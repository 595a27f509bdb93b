// The models match torchvision: parameter tensor counts, element counts and
// names are pinned to torchvision's (checked against torchvision 0.14).
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/error.h"
#include "models/model.h"

namespace dtbench::models {
namespace {

struct Counts {
  std::int64_t tensors = 0;
  std::int64_t elements = 0;
};

Counts count(const std::string& name) {
  auto m = make_model(name, ModelOptions{});
  Counts c;
  for (const auto& p : m->module()->parameters()) {
    ++c.tensors;
    c.elements += p.numel();
  }
  return c;
}

TEST(Models, ResNetFamilyMatchesTorchvision) {
  EXPECT_EQ(count("resnet18").tensors, 62);
  EXPECT_EQ(count("resnet18").elements, 11689512);
  EXPECT_EQ(count("resnet34").elements, 21797672);
  const auto r50 = count("resnet50");
  EXPECT_EQ(r50.tensors, 161);
  EXPECT_EQ(r50.elements, 25557032);
  EXPECT_EQ(count("resnet101").elements, 44549160);
  EXPECT_EQ(count("resnet152").elements, 60192808);
  EXPECT_EQ(count("resnext50_32x4d").elements, 25028904);
  EXPECT_EQ(count("resnext101_32x8d").elements, 88791336);
  EXPECT_EQ(count("wide_resnet50_2").elements, 68883240);
}

TEST(Models, VggAndAlexNetMatchTorchvision) {
  const auto vgg = count("vgg16");
  EXPECT_EQ(vgg.tensors, 32);
  EXPECT_EQ(vgg.elements, 138357544);
  const auto alex = count("alexnet");
  EXPECT_EQ(alex.tensors, 16);
  EXPECT_EQ(alex.elements, 61100840);
}

TEST(Models, InceptionV3MatchesTorchvision) {
  // torchvision.models.inception_v3(aux_logits=True, init_weights=False).
  const auto c = count("inception_v3");
  EXPECT_EQ(c.tensors, 292);
  EXPECT_EQ(c.elements, 27161264);
  auto m = make_model("inception_v3", ModelOptions{});
  const auto names = m->module()->named_parameters();
  EXPECT_EQ(names.begin()->key(), "Conv2d_1a_3x3.conv.weight");
  EXPECT_TRUE(names.contains("Mixed_7c.branch3x3dbl_3b.bn.bias"));
  EXPECT_TRUE(names.contains("AuxLogits.fc.weight"));
  EXPECT_EQ((names.end() - 1)->key(), "fc.bias");
  // AuxLogits sits between Mixed_6e and Mixed_7a, as in torchvision.
  std::vector<std::string> order;
  for (const auto& p : names) order.push_back(p.key());
  const auto pos = [&](const std::string& k) {
    return std::find(order.begin(), order.end(), k) - order.begin();
  };
  EXPECT_LT(pos("Mixed_6e.branch_pool.bn.bias"), pos("AuxLogits.conv0.conv.weight"));
  EXPECT_LT(pos("AuxLogits.fc.bias"), pos("Mixed_7a.branch3x3_1.conv.weight"));
}

TEST(Models, InceptionV3TrainsWithItsAuxHeadAndRefusesSmallImages) {
  ModelOptions o;
  o.num_classes = 10;
  auto m = make_model("inception_v3", o);
  const auto target = torch::tensor({1, 2}, torch::kLong);
  auto loss = m->training_loss(torch::randn({2, 3, 299, 299}), target);
  loss.backward();
  for (const auto& p : m->module()->named_parameters())
    EXPECT_TRUE(p.value().grad().defined()) << p.key() << " got no gradient";
  EXPECT_THROW(m->forward(torch::randn({1, 3, 298, 298})), UsageError);  // too small to train
  m->module()->eval();
  EXPECT_THROW(m->forward(torch::randn({1, 3, 64, 64})), UsageError);
  torch::NoGradGuard no_grad;
  EXPECT_EQ(m->forward(torch::randn({1, 3, 80, 80})).sizes(), (std::vector<int64_t>{1, 10}));
}

TEST(Models, ParameterNamesFollowTorchvision) {
  auto m = make_model("resnet50", ModelOptions{});
  const auto params = m->module()->named_parameters();
  EXPECT_EQ(params.begin()->key(), "conv1.weight");
  EXPECT_TRUE(params.contains("layer1.0.downsample.0.weight"));
  EXPECT_TRUE(params.contains("layer4.2.bn3.bias"));
  EXPECT_EQ((params.end() - 1)->key(), "fc.bias");
  auto v = make_model("vgg16", ModelOptions{});
  const auto vp = v->module()->named_parameters();
  EXPECT_TRUE(vp.contains("features.28.weight"));
  EXPECT_TRUE(vp.contains("classifier.6.bias"));
  auto a = make_model("alexnet", ModelOptions{});
  EXPECT_TRUE(a->module()->named_parameters().contains("classifier.4.weight"));
}

TEST(Models, ForwardShapes) {
  torch::NoGradGuard no_grad;
  ModelOptions o;
  o.num_classes = 10;
  for (const char* name : {"resnet18", "resnet50", "resnext50_32x4d", "vgg16"}) {
    auto m = make_model(name, o);
    EXPECT_EQ(m->input_kind(), InputKind::kImage);
    EXPECT_EQ(m->forward(torch::randn({2, 3, 32, 32})).sizes(), (std::vector<int64_t>{2, 10}))
        << name;
  }
  auto alex = make_model("alexnet", o);
  EXPECT_EQ(alex->forward(torch::randn({1, 3, 64, 64})).sizes(), (std::vector<int64_t>{1, 10}));
  o.in_features = 32;
  o.hidden = 16;
  auto mlp = make_model("mlp", o);
  EXPECT_EQ(mlp->input_kind(), InputKind::kVector);
  EXPECT_EQ(mlp->forward(torch::randn({4, 32})).sizes(), (std::vector<int64_t>{4, 10}));
}

TEST(Models, TransformerParameterCountFollowsItsFormula) {
  ModelOptions o;
  o.vocab = 100;
  o.width = 16;
  o.heads = 4;
  o.layers = 2;
  o.seq_len = 8;
  auto m = make_model("transformer", o);
  std::int64_t elements = 0;
  for (const auto& p : m->module()->parameters()) elements += p.numel();
  // 100*16 + 8*16 + 2*(12*16*16 + 13*16) + 2*16 + 16*100 + 100
  EXPECT_EQ(elements, 1600 + 128 + 2 * 3280 + 32 + 1700);
  EXPECT_EQ(m->input_kind(), InputKind::kTokens);
  torch::NoGradGuard no_grad;
  m->module()->eval();
  const auto logits = m->forward(torch::randint(0, 100, {3, 8}, torch::kLong));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 8, 100}));
  o.heads = 5;
  EXPECT_THROW(make_model("transformer", o), UsageError);
}

// GPT-2 small as Hugging Face's GPT2LMHeadModel: 124,439,808 parameters in
// 148 tensors (the head is the token embedding); the presets' counts from
// the shapes are the published ones.
TEST(Models, Gpt2MatchesHuggingFaceCounts) {
  const auto& small = find_model("gpt2");
  auto m = small.make(small.defaults);
  std::int64_t tensors = 0, elements = 0;
  for (const auto& p : m->module()->parameters()) {
    ++tensors;
    elements += p.numel();
  }
  EXPECT_EQ(elements, 124439808);
  EXPECT_EQ(tensors, 148);
  EXPECT_EQ(small.count_parameters(small.defaults), 124439808);
  EXPECT_EQ(m->input_kind(), InputKind::kTokens);
  EXPECT_EQ(find_model("gpt2-medium").count_parameters(find_model("gpt2-medium").defaults), 354823168);
  EXPECT_EQ(find_model("gpt2-large").count_parameters(find_model("gpt2-large").defaults), 774030080);
  EXPECT_EQ(find_model("gpt2-xl").count_parameters(find_model("gpt2-xl").defaults), 1557611200);
}

// A decoder's logits for a [2, 8] batch are [2, 8, vocab] and causal:
// changing the last token changes only the last position's logits.
void expect_causal(Model& m, int64_t vocab) {
  torch::NoGradGuard no_grad;
  using torch::indexing::Slice;
  auto tokens = torch::randint(0, vocab, {2, 8}, torch::kLong);
  const auto logits = m.forward(tokens);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, 8, vocab}));
  auto changed = tokens.clone();
  changed.index_put_({Slice(), 7}, (tokens.index({Slice(), 7}) + 1) % vocab);
  const auto logits2 = m.forward(changed);
  EXPECT_TRUE(torch::equal(logits.narrow(1, 0, 7), logits2.narrow(1, 0, 7)));
  EXPECT_FALSE(torch::equal(logits.narrow(1, 7, 1), logits2.narrow(1, 7, 1)));
}

// Llama 3.1's published sizes from the shapes alone (no model made), and a
// small one made: the same count from its tensors, Hugging Face's tensor
// order, causal, grouped-query heads checked.
TEST(Models, LlamaSizesAndShapes) {
  const auto& l8 = find_model("llama3-8b");
  EXPECT_EQ(l8.count_parameters(l8.defaults), 8030261248);
  const auto& l70 = find_model("llama3-70b");
  EXPECT_EQ(l70.count_parameters(l70.defaults), 70553706496);
  EXPECT_EQ(llama_ffn_hidden(4096), 14336);
  EXPECT_EQ(llama_ffn_hidden(8192), 28672);
  // 405B: 126 layers, width 16384, 128 heads, 8 key/value heads, a
  // feed-forward of 53248 (3.25 x width), vocabulary 128256; Hugging Face's
  // safetensors hold 405,853,388,800 elements: per layer 2·16384² (q, o) +
  // 2·16384·1024 (k, v) + 3·16384·53248 + 2·16384 = 3,187,703,808, times 126,
  // plus 2·128256·16384 (embedding, head) and the final norm's 16384.
  const auto& l405 = find_model("llama3-405b");
  EXPECT_EQ(llama_ffn_hidden(l405.defaults), 53248);
  EXPECT_EQ(l405.count_parameters(l405.defaults), 405853388800);
  double units = 0;
  for (const auto& u : l405.unit_shapes(l405.defaults, 8192)) units += u.param_elements;
  EXPECT_EQ(units, 405853388800.0);
  ModelOptions o = l8.defaults;
  o.vocab = 50;
  o.width = 16;
  o.heads = 4;
  o.kv_heads = 2;
  o.layers = 2;
  auto m = make_model("llama3-8b", o);
  std::int64_t tensors = 0, elements = 0;
  for (const auto& p : m->module()->parameters()) {
    ++tensors;
    elements += p.numel();
  }
  EXPECT_EQ(elements, llama_parameter_count(o));
  EXPECT_EQ(tensors, 1 + 2 * 9 + 2);  // embedding, 9 per block, final norm and head
  const auto names = m->module()->named_parameters().keys();
  EXPECT_EQ(names.front(), "embed_tokens.weight");
  EXPECT_EQ(names[1], "layers.0.self_attn_q_proj.weight");
  EXPECT_EQ(names.back(), "lm_head.weight");
  EXPECT_EQ(m->module()->named_parameters()["layers.0.self_attn_k_proj.weight"].sizes(),
            (std::vector<int64_t>{8, 16}));  // 2 key/value heads of 4
  EXPECT_EQ(m->unit_seam()->units().size(), 2u);
  expect_causal(*m, o.vocab);
  // A feed-forward width set by hand (--ffn-hidden-size) is the one made.
  o.ffn_hidden = 40;
  auto wide = make_model("llama3-8b", o);
  EXPECT_EQ(wide->module()->named_parameters()["layers.0.mlp_gate_proj.weight"].sizes(),
            (std::vector<int64_t>{40, 16}));
  elements = 0;
  for (const auto& p : wide->module()->parameters()) elements += p.numel();
  EXPECT_EQ(elements, llama_parameter_count(o));
  o.kv_heads = 3;
  EXPECT_THROW(make_model("llama3-8b", o), UsageError);
}

// The units `dtbench project` takes from the shapes are the FSDP units the
// made model has: the root (everything outside the blocks) first, then one
// per block, adding up to the model's parameters and forward multiply-adds.
TEST(Models, UnitShapesAreTheModelsFsdpUnits) {
  for (const std::string name : {"gpt2", "llama3-8b"}) {
    SCOPED_TRACE(name);
    const auto& e = find_model(name);
    ModelOptions o = e.defaults;
    o.vocab = 50;
    o.width = 16;
    o.heads = 4;
    o.kv_heads = name == "gpt2" ? 0 : 2;
    o.layers = 3;
    o.positions = 32;
    o.seq_len = 8;
    const auto shapes = e.unit_shapes(o, 8);
    ASSERT_EQ(shapes.size(), 4u);
    double elements = 0, macs = 0;
    for (const auto& u : shapes) {
      elements += u.param_elements;
      macs += u.forward_macs;
    }
    EXPECT_DOUBLE_EQ(elements, static_cast<double>(e.count_parameters(o)));
    EXPECT_DOUBLE_EQ(macs, e.forward_macs(o, 8));
    auto m = make_model(name, o);
    const auto& units = m->unit_seam()->units();
    ASSERT_EQ(units.size(), 3u);
    double in_blocks = 0;
    for (std::size_t b = 0; b < units.size(); ++b) {
      double n = 0;
      std::vector<double> tensors;  // the block's parameter tensors (registered in its own order)
      for (const auto& p : units[b]->parameters()) {
        n += static_cast<double>(p.numel());
        tensors.push_back(static_cast<double>(p.numel()));
      }
      EXPECT_DOUBLE_EQ(shapes[b + 1].param_elements, n);
      // The shapes list them in the order forward uses them (Llama registers
      // its norms last): the same tensors.
      auto listed = shapes[b + 1].tensors;
      std::sort(listed.begin(), listed.end());
      std::sort(tensors.begin(), tensors.end());
      EXPECT_EQ(listed, tensors);
      in_blocks += n;
    }
    // Llama's head is untied (vocabulary x width), GPT-2's tied to its embedding.
    EXPECT_DOUBLE_EQ(shapes[0].head_elements, name == "gpt2" ? 0.0 : 50.0 * 16);
    EXPECT_DOUBLE_EQ(shapes[0].param_elements, elements - in_blocks);
  }
}

// GPT-2's shape at a size a test builds in milliseconds.
ModelOptions tiny_gpt2() {
  ModelOptions o = find_model("gpt2").defaults;
  o.vocab = 50;
  o.width = 16;
  o.heads = 4;
  o.layers = 2;
  o.positions = 8;
  o.seq_len = 8;
  return o;
}

TEST(Models, GptIsCausalTiedAndChecksItsShapes) {
  ModelOptions o = tiny_gpt2();
  auto m = make_model("gpt2", o);
  std::int64_t elements = 0;
  for (const auto& p : m->module()->parameters()) elements += p.numel();
  EXPECT_EQ(elements, gpt_parameter_count(o));
  expect_causal(*m, o.vocab);
  o.heads = 5;
  EXPECT_THROW(make_model("gpt2", o), UsageError);
  o.heads = 4;
  o.seq_len = 9;  // longer than the position table
  EXPECT_THROW(make_model("gpt2", o), UsageError);
}

// Each biased projection is one GEMM with its bias folded in (addmm), as
// Python's nn.Linear runs it: LibTorch's C++ Linear::forward on a 3-D input
// runs matmul and then a pass of its own for the bias (on an H200, 4 % of
// GPT-2's iteration in bf16). Read off the autograd graph's nodes.
std::map<std::string, int> grad_nodes(const torch::Tensor& out) {
  std::map<std::string, int> names;
  std::set<const torch::autograd::Node*> seen;
  std::vector<const torch::autograd::Node*> todo{out.grad_fn().get()};
  while (!todo.empty()) {
    const auto* node = todo.back();
    todo.pop_back();
    if (node == nullptr || !seen.insert(node).second) continue;
    ++names[node->name()];
    for (const auto& edge : node->next_edges()) todo.push_back(edge.function.get());
  }
  return names;
}

TEST(Models, BiasedProjectionsAreOneGemmAsInPython) {
  ModelOptions o = tiny_gpt2();
  auto gpt = make_model("gpt2", o);
  auto nodes = grad_nodes(gpt->forward(torch::randint(o.vocab, {2, o.seq_len}, torch::kLong)));
  EXPECT_EQ(nodes["AddmmBackward0"], 4 * o.layers);  // c_attn, attn c_proj, c_fc, mlp c_proj
  EXPECT_EQ(nodes["MmBackward0"], 1);                // the tied LM head, without a bias
  EXPECT_EQ(nodes["AddBackward0"], 2 * o.layers + 1) << "only the residuals and the position embedding add";
  o = find_model("transformer").defaults;
  o.vocab = 50;
  o.width = 16;
  o.heads = 4;
  o.layers = 1;
  o.seq_len = 8;
  auto lm = make_model("transformer", o);
  nodes = grad_nodes(lm->forward(torch::randint(o.vocab, {2, o.seq_len}, torch::kLong)));
  EXPECT_EQ(nodes["AddmmBackward0"], 1);  // the head (the C++ encoder layer runs LibTorch's own Linear)
}

TEST(Models, UnknownModelListsValidNames) {
  try {
    make_model("resnet9000", ModelOptions{});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("resnet50"), std::string::npos);
  }
}

}  // namespace
}  // namespace dtbench::models
