#pragma once
// --activation-checkpointing's modes, one definition for the models that
// run them (models/checkpoint.h) and the projection that costs them
// (project/layout_model.h). Torch-free.
#include <string>

namespace dtbench::layout {

// What a model recomputes in backward:
//  kNone:      nothing; every block keeps its activations.
//  kFull:      every unit (a transformer block, a ResNet block, an MLP's
//              hidden layer) keeps its input only and runs forward again in
//              backward (torchtitan's "full").
//  kSelective: in every attention block, the attention core (scores QKᵀ,
//              causal mask, softmax, the weighted sum of V; grouped-query
//              heads' repetition of K and V) keeps q, k and v only and is
//              recomputed: Megatron-LM's selective recomputation
//              (Korthikanti et al. 2022), the part whose activations grow
//              with the sequence squared. torchtitan's "selective" (op-level
//              policy or every n-th layer) recomputes other parts.
enum class Recompute { kNone, kFull, kSelective };

const char* recompute_name(Recompute r);
// "none", "full" or "selective"; throws UsageError naming them otherwise.
Recompute parse_recompute(const std::string& name);

}  // namespace dtbench::layout
