//! The seed's pitfalls as compile errors. Each lesson is a file in `ui-tests/`, checked by
//! trybuild against the compiler's real output; the text here is included from those files,
//! so it cannot drift from what rustc says.
//!
//! Every lesson page shows the program (its opening comment says what PyTorch does at run
//! time, what devtype says at compile time, and the fix) and then rustc 1.95's diagnostic,
//! exactly as `cargo test --test ui` checks it (every line of it, for each lesson); the same
//! run builds and runs each fixed program of [`done_right`].
//!
//! | Lesson | The PyTorch mistake | Caught by |
//! |---|---|---|
//! | [`cpu_plus_cuda`] | `out + bias` with `bias` still on the CPU | [`OperandOn`](crate::OperandOn) |
//! | [`cuda0_with_cuda1`] | two GPUs are two devices | [`OperandOn`](crate::OperandOn) |
//! | [`quick_check_1_result_dropped`] | the seed's quick check: `x.to("cuda")` not rebound | `#[must_use]` on [`Tensor::to`](crate::Tensor::to) |
//! | [`quick_check_2_fed_to_cuda_model`] | ... and then `model(x)` with the model on the GPU | [`ModuleInput`](crate::ModuleInput) |
//! | [`batch_not_moved`] | suspect one: a batch you forgot to move | [`ModuleInput`](crate::ModuleInput) |
//! | [`tensor_created_in_forward`] | suspect two: a tensor created inside `forward` without `device=x.device` | the operand check of `+` on a [`Var`](crate::Var) |
//! | [`loss_weight_on_cpu`] | suspect three: a `CrossEntropyLoss(weight=...)` left on the CPU | [`ModuleInput`](crate::ModuleInput) |
//! | [`try_into_typed_then_mixed`] | a config-driven tensor, typed as `Cuda<0>`, mixed with a CPU one | [`OperandOn`](crate::OperandOn) |
//! | [`try_into_typed_dyn_device`] | `DynDevice` used where a device type belongs | [`Device`](crate::Device) |
//! | [`cat_cpu_cuda`] | `torch.cat` of a CPU and a GPU tensor | [`ArgumentOn`](crate::ArgumentOn) via `Tensor::cat`'s tuple |
//! | [`matmul_across_devices`] | a matrix product across devices | [`ArgumentOn`](crate::ArgumentOn) |
//! | [`helper_reference_across_devices`] | a helper that borrows a weight on the wrong device, passing `&w` on with `w: &Tensor` | [`ArgumentOn`](crate::ArgumentOn) (for `&&Tensor` too) |
//! | [`train_batch_not_moved`] | in the training loop: a batch not moved inside the loop | [`ModuleInput`](crate::ModuleInput) |
//! | [`train_tensor_in_forward`] | in the training loop: a tensor created in `forward` on a fixed device | the operand check of `+` |
//! | [`train_loss_weight_on_cpu`] | in the training loop: the loss weight left on the CPU | [`ModuleInput`](crate::ModuleInput) |
//! | [`train_optimizer_state_on_cpu`] | after resuming a checkpoint: optimizer state on another device than the model | [`ModelOn`](crate::optim::ModelOn) |
//! | [`eq_cpu_labels_gpu_preds`] | `labels.eq(preds)` with the labels on the CPU: the GPU is named first, as PyTorch does | [`OperandOn`](crate::OperandOn) |
//! | [`where_mask_on_cpu`] | `torch.where(mask, a, b)` with the mask left on the CPU | [`MaskFor`](crate::MaskFor) |
//! | [`add_assign_across_devices`] | `running += stat` with the accumulator on another device | [`OperandOn`](crate::OperandOn) via `AddAssign` |
//! | [`sequential_layer_not_moved`] | a `Sequential` with one layer left on the CPU | [`LayerAt`](crate::nn::LayerAt) at `Sequential::new` |
//! | [`train_optimizer_built_before_move`] | an optimizer that stepped before the model moved: its state stayed behind | [`ModelOn`](crate::optim::ModelOn) |
//! | [`train_model_not_moved`] | in the training loop: the batch moved, the model never did | [`ModuleInput`](crate::ModuleInput) |
//! | [`parameter_replaced_on_cpu`] | `model.weight = nn.Parameter(cpu_tensor)` after `model.to(gpu)` | [`ParameterOn`](crate::nn::ParameterOn) via `Linear::set_weight` |
//! | [`matmul_f32_with_i64`] | `float @ long`: `expected m1 and m2 to have the same dtype` | [`MatrixElementIs`](crate::MatrixElementIs) |
//! | [`add_f32_with_i64`] | `float + long`, which PyTorch promotes silently | [`ElementIs`](crate::ElementIs) |
//! | [`index_select_ids_on_cpu`] | an embedding lookup with the token ids left on the CPU | [`ArgumentOn`](crate::ArgumentOn) |
//! | [`embedding_ids_on_cpu`] | token ids left on the CPU, fed to an `nn.Embedding` on the GPU | [`ModuleInput`](crate::ModuleInput) at `Embedding::forward` |
//! | [`batchnorm_left_on_cpu`] | a `BatchNorm2d` built on the CPU, only the rest of the model moved | [`ModuleInput`](crate::ModuleInput) at `BatchNorm2d::forward` |
//! | [`attention_mask_created_in_forward`] | an attention mask created in `forward` on the CPU | [`AttnMask`](crate::nn::AttnMask) at `scaled_dot_product_attention` |
//! | [`shape_add_sizes`] | an element-wise op on sizes that do not broadcast | [`BroadcastSizes`](crate::shaped::BroadcastSizes) |
//! | [`shape_matmul_sizes`] | `x @ w` whose inner sizes differ (`64x784 and 512x10`) | [`MmSizesRowsDyn`](crate::shaped::MmSizesRowsDyn) |
//! | [`shape_bmm_batch`] | `torch.bmm` of batches of different sizes | [`BmmSizes`](crate::shaped::BmmSizes) |
//! | [`shape_model_input_width`] | a batch of the wrong width fed to a model | [`AddmmSizesRowsDyn`](crate::shaped::AddmmSizesRowsDyn) |
//! | [`shape_sequential_not_chained`] | an `nn.Sequential` whose layers do not chain | [`ChainSizes`](crate::shaped::ChainSizes) at `Seq::then` |
//! | [`shape_reshape_count`] | `x.view(2, 5)` of 40 elements | [`Reshape2`](crate::shaped::Reshape2) |
//! | [`shape_cat_sizes`] | `torch.cat` of tensors whose other sizes differ | [`CatSizes`](crate::shaped::CatSizes) |
//! | [`shape_reduce_dim`] | `x.sum(2)` of a matrix | [`HasDim`](crate::shaped::HasDim) |
//! | [`shape_transpose_dim`] | `x.transpose(1, 2)` of a matrix | [`Transpose`](crate::shaped::Transpose) |
//! | [`shape_cross_entropy_batch`] | `cross_entropy` with 16 targets for 32 rows | [`BatchSizes`](crate::shaped::BatchSizes) |
//! | [`shape_linear_weight`] | `F.linear(x, w, b)` with a weight for 512 input features, 784 given | [`AddmmSizes`](crate::shaped::AddmmSizes) |
//! | [`shape_stack_sizes`] | `torch.stack` of a `[2, 3]` and a `[2, 4]` | [`StackSizes`](crate::shaped::StackSizes) |
//! | [`shape_index_select_index`] | `index_select` with a `[4, 8]` index | [`IndexIsVector`](crate::shaped::IndexIsVector) |
//! | [`shape_softmax_dim`] | `x.softmax(2)` of a matrix | [`HasDim`](crate::shaped::HasDim) |
//! | [`shape_permute_order`] | `x.permute(0, 0, 1)` | [`Permute`](crate::shaped::Permute) |
//! | [`shape_flatten_rank`] | `flatten` of a batch that is already flat | [`Flatten`](crate::shaped::Flatten) |
//! | [`shape_size_outside_table`] | a static size outside devtype's table, where an op computes with it | [`TableSize`](crate::shaped::TableSize) |
//! | [`shape_devices_mixed`] | shapes that agree on two devices: still the device sentence | [`ArgumentOn`](crate::ArgumentOn) |
//! | [`graph_to_vec_in_capture`] | `y.to_vec()` inside `torch.cuda.graph`: `operation not permitted when stream is capturing` | [`HostSync`](crate::HostSync) |
//! | [`graph_item_in_capture`] | `loss.item()` inside a captured step | [`HostSync`](crate::HostSync) |
//! | [`graph_print_in_capture`] | `print(y)` inside a capture | [`HostSync`](crate::HostSync) via `Display` |
//! | [`graph_synchronize_in_capture`] | `torch.cuda.synchronize()` inside a capture | [`HostSync`](crate::HostSync) on `Device::synchronize` |
//! | [`graph_to_cpu_in_capture`] | `y.cpu()` inside a capture | [`CopyTo`](crate::CopyTo) on `Tensor::to` |
//! | [`graph_module_to_cpu_in_capture`] | `model.cpu()` inside a capture | [`CopyTo`](crate::CopyTo) on `Module::to` |
//! | [`graph_debug_in_capture`] | `print(repr(y))` inside a capture | [`HostSync`](crate::HostSync) via `Debug` |
//! | [`optimizer_f32_model_bf16`] | a `bf16` model, an optimizer in `f32`: `expected scalar type BFloat16 but found Float` | [`ModelOn`](crate::optim::ModelOn) |
//! | [`scaler_f16_model`] | `model.half()` with a `GradScaler`: `Attempting to unscale FP16 gradients.` | [`ScaledModelOn`](crate::optim::ScaledModelOn) |
//! | [`scaler_unscale_bf16_model`] | `scaler.unscale_` on a `bf16` model | [`ScaledModelOn`](crate::optim::ScaledModelOn) |
//! | [`sequential_f16_layer`] | one `f16` layer among `f32` layers | [`LayerElementAt`](crate::nn::LayerElementAt) at `Sequential::new` |
//! | [`half_model_f32_batch`] | an `f16` model fed `f32` batches | [`InputElementIs`](crate::InputElementIs) |
//! | [`loader_f64_batch`] | `f64` rows from the data set into an `f32` model | [`InputElementIs`](crate::InputElementIs) via [`Forward`](crate::nn::Forward) |
//! | [`set_grad_f16`] | `p.grad = g` with `g` in `f16` | [`GradElementIs`](crate::GradElementIs) |
//! | [`generic_step_model_on_cpu`] | a generic optimizer on `D`, the model on `Cpu` | [`ModelDeviceIs`](crate::optim::ModelDeviceIs) |
//!
//! The fixed programs, which compile and run on any machine (on the CPU, and on GPU 0 too where
//! one opens), are in [`done_right`].

/// One compile-fail lesson: its source and its `.stderr` snapshot, both included verbatim.
///
/// The program is shown as Rust, but it is not also a `compile_fail` doctest: `ui-tests/`
/// (trybuild, `cargo test --test ui`) compiles it and checks every line of its `.stderr`,
/// which a doctest's "does not compile" cannot (75 such doctests took most of the doctests'
/// time).
macro_rules! lesson {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        ///
        /// # The program
        ///
        #[cfg_attr(not(doctest), doc = "```rust,compile_fail")]
        #[cfg_attr(doctest, doc = "```text")]
        #[doc = include_str!(concat!("../ui-tests/fail/", stringify!($name), ".rs"))]
        /// ```
        ///
        /// # What rustc 1.95 says
        ///
        /// ```text
        #[doc = include_str!(concat!("../ui-tests/fail/", stringify!($name), ".stderr"))]
        /// ```
        pub mod $name {}
    };
}

lesson!(
    /// `Cpu + Cuda<0>`: adding a CPU tensor to a GPU tensor.
    cpu_plus_cuda
);
lesson!(
    /// `Cuda<0>` with `Cuda<1>`: two GPUs are two devices.
    cuda0_with_cuda1
);
lesson!(
    /// The seed's quick check, part 1: `x.to(gpu);` without rebinding `x` is an error under
    /// `#![deny(unused_must_use)]`.
    quick_check_1_result_dropped
);
lesson!(
    /// The seed's quick check, part 2: the `x` that was not rebound is fed to a model on the GPU.
    quick_check_2_fed_to_cuda_model
);
lesson!(
    /// Suspect one: a batch that was never moved to the model's device.
    batch_not_moved
);
lesson!(
    /// Suspect two: a tensor created inside a generic `forward` on a fixed device instead of the
    /// input's (`x.device()`).
    tensor_created_in_forward
);
lesson!(
    /// Suspect three: a `CrossEntropyLoss` whose class weight stayed on the CPU.
    loss_weight_on_cpu
);
lesson!(
    /// `try_into_typed::<Cuda<0>>()`, then mixed with a `Tensor<Cpu>`: the type carries the
    /// device from the run-time check on.
    try_into_typed_then_mixed
);
lesson!(
    /// `try_into_typed::<DynDevice>()`: a run-time device value is not a device type.
    try_into_typed_dyn_device
);
lesson!(
    /// `Tensor::cat((&cpu, &cuda), 0)`: joining tensors from two devices.
    cat_cpu_cuda
);
lesson!(
    /// `cuda.matmul(&cpu)`: a matrix product across devices.
    matmul_across_devices
);
lesson!(
    /// A helper taking `w: &Tensor<Cpu>` for an input on the GPU: one device error in the
    /// helper, also where it writes `&w` (a reference to a reference is an operand too).
    helper_reference_across_devices
);
lesson!(
    /// In the training loop, suspect one: a batch not moved inside the loop.
    train_batch_not_moved
);
lesson!(
    /// In the training loop, suspect two: a tensor created in `forward` on a fixed device.
    train_tensor_in_forward
);
lesson!(
    /// In the training loop, suspect three: the loss's class weights left on the CPU.
    train_loss_weight_on_cpu
);
lesson!(
    /// After resuming a checkpoint: optimizer state on another device than the model.
    train_optimizer_state_on_cpu
);
lesson!(
    /// `cpu_labels.eq(&gpu_preds)`: element-wise ops and comparisons name the first non-CPU
    /// device first, as PyTorch's TensorIterator check and `DynTensor` do.
    eq_cpu_labels_gpu_preds
);
lesson!(
    /// `cpu_mask.where_cond(&gpu_a, &gpu_b)`: one error, about the mask, not the branches.
    where_mask_on_cpu
);
lesson!(
    /// `running += &stat` across devices: `+=` has the device bound of `+`.
    add_assign_across_devices
);
lesson!(
    /// `Sequential::new((gpu_body, ReLU, cpu_head))`: rejected where the model is built, naming
    /// the layer's position and both devices.
    sequential_layer_not_moved
);
lesson!(
    /// An optimizer that took a step on the CPU model, then was stepped with the moved model:
    /// both devices named, and the fix that applies (build it after the move, or move it).
    train_optimizer_built_before_move
);
lesson!(
    /// In the training loop, the batch moved but the model never did: the model is blamed, and
    /// the loss, which has no buffers, says its device comes from the logits.
    train_model_not_moved
);
lesson!(
    /// `layer.set_weight(cpu_parameter)` on a layer on the GPU: parameters are private, and the
    /// setter takes only a tensor on the layer's device.
    parameter_replaced_on_cpu
);
lesson!(
    /// `features.matmul(&counts)` with `f32` features and `i64` counts: PyTorch's `mm` dtype
    /// sentence, and the `to_dtype` fix.
    matmul_f32_with_i64
);
lesson!(
    /// `&scores + &labels` with `f32` scores and `i64` labels: no silent promotion, TensorIterator's
    /// dtype sentence, and the `to_dtype` fix.
    add_f32_with_i64
);
lesson!(
    /// `table.index_select(0, &ids)` with the embedding table on the GPU and the token ids on
    /// the CPU: PyTorch names `index`, devtype points at the ids.
    index_select_ids_on_cpu
);
lesson!(
    /// Token ids left on the CPU for an `Embedding` on the GPU: the module input check names
    /// both devices at `emb.forward(&ids)`.
    embedding_ids_on_cpu
);
lesson!(
    /// A `BatchNorm2d` built on the CPU while the conv before it moved to the GPU: its
    /// parameters and running statistics (buffers) stayed behind, and the conv's output is not
    /// its input.
    batchnorm_left_on_cpu
);
lesson!(
    /// An attention mask created on the CPU inside a generic `forward`: the mask argument of
    /// `scaled_dot_product_attention` names `D` and `Cpu`.
    attention_mask_created_in_forward
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `a + b` of `(C<2>, C<3>)` and `(C<2>, C<4>)`: sizes that do not broadcast.
    shape_add_sizes
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `x.matmul(&w)` with 784 columns against 512 rows, the batch `Dyn`.
    shape_matmul_sizes
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `a.bmm(&b)` of 3 and 4 matrices.
    shape_bmm_batch
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `model.forward(&x)` with 28 features where the first layer takes 784.
    shape_model_input_width
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `Seq::new(StaticLinear<784, 512>).then(ReLU).then(StaticLinear<256, 10>)`: layers that do not chain.
    shape_sequential_not_chained
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `reshape::<(C<2>, C<5>)>()` of 40 elements.
    shape_reshape_count
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `a.cat(Axis::<1>, &b)` with 2 rows against 3.
    shape_cat_sizes
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `sum::<2>()` of a matrix.
    shape_reduce_dim
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `transpose::<1, 2>()` of a matrix.
    shape_transpose_dim
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `cross_entropy` with 16 targets for 32 rows of logits.
    shape_cross_entropy_batch
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `x.linear(&w, Some(&b))` with `w` of `[10, 512]` for `x` of 784 features.
    shape_linear_weight
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `a.stack(Axis::<0>, &b)` of `(C<2>, C<3>)` and `(C<2>, C<4>)`.
    shape_stack_sizes
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `table.index_select(Axis::<0>, &ids)` with `ids` of `(C<4>, C<8>)`.
    shape_index_select_index
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `softmax::<2>()` of a matrix.
    shape_softmax_dim
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `permute::<(C<0>, C<0>, C<1>)>()`: a dimension twice.
    shape_permute_order
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `flatten()` of `(Dyn, C<784>)`, already flat.
    shape_flatten_rank
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `x + bias` with 3001 features, a size outside the table of static sizes.
    shape_size_outside_table
);
lesson!(
    /// Static shapes ([`crate::shaped`]): `x.matmul(&w)` of shaped tensors whose sizes agree and devices do not.
    shape_devices_mixed
);

lesson!(
    /// `scaler.scale(&loss)` with the loss on the CPU and the `GradScaler` on the GPU: the loss is
    /// the culprit, `GradScaler::new(dev)` the fix.
    scaler_loss_on_cpu
);
lesson!(
    /// An `f16` loss handed to `GradScaler::scale`: PyTorch's dtype sentence, no move offered.
    scaler_f16_loss
);
lesson!(
    /// A `GradScaler` built on the CPU stepping a model on the GPU: one error, naming
    /// `GradScaler::new(dev)`.
    scaler_on_cpu_model_on_gpu
);
lesson!(
    /// `p.try_set_grad(Some(cpu_grad))` for a parameter on the GPU: the gradient's device is
    /// checked by type.
    set_grad_on_cpu
);
lesson!(
    /// `y.backward_with(&cpu_grad)` for `y` on the GPU.
    backward_with_grad_on_cpu
);
lesson!(
    /// `gpu_tensor.to_async(gpu)`: on a GPU tensor `to_async` is the download; pass `Cpu`.
    to_async_gpu_to_gpu
);
lesson!(
    /// A `Download` read before `.wait()`: the values arrive only through the wait.
    download_read_without_wait
);
lesson!(
    /// A `DataLoader` over samples already on the GPU: PyTorch's pinning sentence, at
    /// `DataLoader::new`.
    data_loader_gpu_samples
);
lesson!(
    /// `i64` features into an `f32` `Linear`: `F.linear`'s dtype sentence, the input first.
    linear_input_i64
);
lesson!(
    /// Float class labels for `CrossEntropyLoss`: PyTorch's target-dtype sentence.
    cross_entropy_float_targets
);
lesson!(
    /// `positions_i64 += &noise_f32`: PyTorch's in-place cast sentence; convert the receiver.
    add_assign_f32_into_i64
);
lesson!(
    /// A tensor under `module!`'s `keep`: it must move with the module, listed with the modules.
    module_keep_tensor
);
lesson!(
    /// `opt.step(model)` in `fn step<D: Device>` with an `Sgd<Cpu>`: the headline names `D` and
    /// `Cpu`.
    generic_step_optimizer_on_cpu
);

lesson!(
    /// `y.to_vec()` inside a CUDA graph capture: the step's tensors are on
    /// `Capturing<Cuda<0>>`, which has no `HostSync`.
    graph_to_vec_in_capture
);
lesson!(
    /// `loss.item()` inside a captured training step.
    graph_item_in_capture
);
lesson!(
    /// `println!("{y}")` of a tensor inside a CUDA graph capture.
    graph_print_in_capture
);
lesson!(
    /// `dev.synchronize()` on the capturing device inside the step.
    graph_synchronize_in_capture
);
lesson!(
    /// `y.to(Cpu)` of a tensor inside a CUDA graph capture: a capturing device's tensors move
    /// to a GPU, not to the host.
    graph_to_cpu_in_capture
);
lesson!(
    /// `model.to(Cpu)` of a model typed on the capturing device, inside a CUDA graph capture:
    /// a module moves as its tensors do, to a GPU and not to the host.
    graph_module_to_cpu_in_capture
);
lesson!(
    /// `println!("{y:?}")` of a tensor inside a CUDA graph capture (`Debug` prints the values).
    graph_debug_in_capture
);
lesson!(
    /// `opt.step(model)` in `fn step<D: Device>` with the model typed on `Cpu` and the optimizer
    /// on `D` (the reverse of [`generic_step_optimizer_on_cpu`]).
    generic_step_model_on_cpu
);
lesson!(
    /// A `bf16` model stepped by an optimizer typed in `f32`: PyTorch's fused optimizers'
    /// dtype sentence, never a device sentence naming one device twice.
    optimizer_f32_model_bf16
);
lesson!(
    /// An `f16` model stepped by a `GradScaler`: PyTorch's `Attempting to unscale FP16
    /// gradients.`, with the element type.
    scaler_f16_model
);
lesson!(
    /// `scaler.unscale_(&model)` (before clipping) on a `bf16` model, which needs no scaler.
    scaler_unscale_bf16_model
);
lesson!(
    /// A `Sequential` with one `f16` layer among `f32` layers: `addmm`'s dtype sentence and the
    /// layer's position, at `Sequential::new`.
    sequential_f16_layer
);
lesson!(
    /// An `f16` model fed the `f32` batches of the data pipeline.
    half_model_f32_batch
);
lesson!(
    /// `f64` rows (NumPy's default) batched by a `DataLoader` into an `f32` model of your own,
    /// called through `Forward`.
    loader_f64_batch
);
lesson!(
    /// An `f16` gradient set by hand on an `f32` parameter: PyTorch's assignment sentence.
    set_grad_f16
);

/// The same programs done right: each compiles and runs (trybuild runs them), on the CPU
/// everywhere and on GPU 0 too where one opens.
pub mod done_right {
    /// One pass case, included verbatim.
    macro_rules! fixed {
        ($(#[$doc:meta])* $name:ident) => {
            $(#[$doc])*
            ///
            // trybuild builds and runs it: like the lessons, not a doctest too.
            #[cfg_attr(not(doctest), doc = "```rust,no_run")]
            #[cfg_attr(doctest, doc = "```text")]
            #[doc = include_str!(concat!("../ui-tests/pass/", stringify!($name), ".rs"))]
            /// ```
            pub mod $name {}
        };
    }

    fixed!(
        /// The seed's example end to end, generic over `D: Device`.
        seed
    );
    fixed!(
        /// Mixed precision with the `GradScaler` on the model's device, and gradients set by hand
        /// next to their parameter.
        amp_scaler_on_model_device
    );
    fixed!(
        /// A `DataLoader` over host samples, an in-place op with the receiver converted, a tensor
        /// listed with `module!`'s modules, and a download read after `.wait()`.
        host_samples_async_copies
    );
    fixed!(
        /// A training step generic over `D` with the optimizer on `D`.
        generic_step
    );
    fixed!(
        /// A training step captured into a CUDA graph, fed through `StaticTensor::copy_from`,
        /// its loss read with `StaticTensor::read` after each replay.
        graph_static_io
    );
    fixed!(
        /// A generic `forward<D: Device>` that creates its tensors on `x.device()`.
        generic_forward
    );
    fixed!(
        /// Inference through `&a + Tensor::zeros(..)`: nothing about the device is spelled out.
        inference_zeros
    );
    fixed!(
        /// `Tensor::cat((&a, &b), 0)` and `Tensor::stack` with every tensor on one device.
        cat_on_one_device
    );
    fixed!(
        /// Token ids moved with their batch before an embedding lookup.
        ids_moved_with_batch
    );
    fixed!(
        /// Token ids moved with the batch into an `Embedding`; positions and attention masks
        /// created on the input's device inside `forward`, or left to `is_causal`.
        attention_on_input_device
    );
    fixed!(
        /// The training set-up in order: the model moved once, the optimizer built after the
        /// move, every batch moved inside the loop.
        optimizer_after_move
    );
    fixed!(
        /// Low precision done right: a `bf16` model with a `bf16` optimizer and no scaler, one
        /// element type per `Sequential`, batches converted to the model's type, a gradient of
        /// its parameter's type.
        low_precision_training
    );
    fixed!(
        /// A training step generic over `D` with the model typed on the optimizer's `D`.
        generic_step_model_typed_on_d
    );
    fixed!(
        /// Static shapes ([`crate::shaped`]): the MNIST-shaped model, every result shape inferred.
        shape_mlp_inferred
    );
    fixed!(
        /// Static shapes ([`crate::shaped`]): every checked op family, each result shape inferred.
        shape_ops_inferred
    );
}
