//! The graph: nodes recorded by ops on tracked tensors, the grad mode, and the backward pass.
//!
//! Each op on a tracked input records one [`Node`] holding the op's backward rule (a closure
//! over the tensors it saved) and its inputs' nodes. Each node has a rank one above its
//! highest input's (a leaf's is 0), so walking the reachable nodes from the highest rank down
//! visits every node after all of its consumers: a reverse topological order with no sort of
//! edges, and no shared counter for ops on any thread to contend on. Gradients flow as
//! untyped tensors on the device they were computed on; the typed fronts put the device back
//! in the type.

use crate::core::error::{Error, Result};
use crate::core::raw::{Operand, RawTensor};
use crate::ops::BinaryOp;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// One gradient per input of an op (`None` for inputs that need none).
pub(crate) type Grads = Vec<Option<RawTensor>>;

/// A node's backward rule, run at most once: the gradient of the op's output in, the
/// gradients of its inputs out. `None` once it has run (its saved tensors are then freed) and
/// for a leaf, which has none. Public only as [`Node`] is: not reachable from outside.
pub trait Rule: Send {
    /// Runs the rule if it has not run, freeing what it saved.
    fn run_once(&mut self, grad: RawTensor) -> Option<Result<Grads>>;
}

/// An op's rule (a closure over the tensors it saved), kept inside its node until it runs.
struct Once<F>(Option<F>);

impl<F: FnOnce(RawTensor) -> Result<Grads> + Send> Rule for Once<F> {
    fn run_once(&mut self, grad: RawTensor) -> Option<Result<Grads>> {
        self.0.take().map(|rule| rule(grad))
    }
}

/// A leaf's rule: there is none.
struct NoRule;

impl Rule for NoRule {
    fn run_once(&mut self, _: RawTensor) -> Option<Result<Grads>> {
        None
    }
}

/// PyTorch's text for a second backward through a freed graph.
pub(crate) const BACKWARD_TWICE: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";

/// A node of the autograd graph: a parameter (leaf) or the op that made a tensor.
///
/// Public only so that a crate-private trait can name it; it is not reachable from outside.
///
/// The rule is stored in the node itself (`Arc<Node<Once<F>>>`, used as `Arc<Node>`), so
/// recording an op makes one allocation, not one for the node and one for a boxed closure.
pub struct Node<R: ?Sized + Rule = dyn Rule> {
    /// Above every input's rank (the module's note).
    rank: u64,
    name: &'static str,
    inputs: NodeInputs,
    /// The accumulated gradient of a leaf.
    grad: Mutex<Option<RawTensor>>,
    leaf: bool,
    /// Last, so that a node with a concrete rule coerces to one with `dyn Rule`.
    backward: Mutex<R>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Node({}, rank {})", self.name, self.rank)
    }
}

/// The most inputs a node keeps inline (every op but `cat` and `stack` of many tensors).
const FEW_INPUTS: usize = 3;

/// The nodes of an op's inputs (`None` for an untracked input), one per input: inline for up
/// to [`FEW_INPUTS`], so recording an op makes no allocation for them.
enum NodeInputs {
    Few {
        len: u8,
        nodes: [Option<Arc<Node>>; FEW_INPUTS],
    },
    Many(Vec<Option<Arc<Node>>>),
}

impl NodeInputs {
    const EMPTY: NodeInputs = NodeInputs::Few {
        len: 0,
        nodes: [None, None, None],
    };

    fn new(inputs: &[Option<&Arc<Node>>]) -> Self {
        if inputs.len() > FEW_INPUTS {
            return NodeInputs::Many(inputs.iter().map(|n| n.cloned()).collect());
        }
        let mut nodes: [Option<Arc<Node>>; FEW_INPUTS] = Default::default();
        for (slot, input) in nodes.iter_mut().zip(inputs) {
            *slot = input.cloned();
        }
        NodeInputs::Few {
            len: inputs.len() as u8,
            nodes,
        }
    }

    fn iter(&self) -> std::slice::Iter<'_, Option<Arc<Node>>> {
        match self {
            NodeInputs::Few { len, nodes } => nodes[..*len as usize].iter(),
            NodeInputs::Many(v) => v.iter(),
        }
    }

    fn len(&self) -> usize {
        self.iter().len()
    }

    /// The inputs, leaving none behind.
    fn take(&mut self) -> NodeInputs {
        std::mem::replace(self, NodeInputs::EMPTY)
    }

    /// The tracked inputs' nodes, by value.
    fn into_nodes(self) -> impl Iterator<Item = Arc<Node>> {
        let (few, len, many) = match self {
            NodeInputs::Few { len, nodes } => (nodes, len as usize, Vec::new()),
            NodeInputs::Many(v) => (Default::default(), 0, v),
        };
        few.into_iter().take(len).chain(many).flatten()
    }
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Node {
    /// A new leaf: a tensor that requires grad and accumulates it.
    pub(crate) fn leaf() -> Arc<Node> {
        Arc::new(Node {
            rank: 0,
            name: "AccumulateGrad",
            inputs: NodeInputs::EMPTY,
            grad: Mutex::new(None),
            leaf: true,
            backward: Mutex::new(NoRule),
        })
    }

    /// The node's address: its identity while any handle to it lives (a parameter's, shared
    /// by all of its handles; a key of the backward pass). A thin pointer's, as `Node` is
    /// unsized.
    pub(crate) fn address(node: &Arc<Node>) -> usize {
        Arc::as_ptr(node).cast::<()>() as usize
    }

    /// True for a parameter (a tensor created by the user that requires grad).
    pub(crate) fn is_leaf(&self) -> bool {
        self.leaf
    }

    /// The name of the op that made the tensor (`AddBackward`, ...), PyTorch's `grad_fn`.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// The accumulated gradient of a leaf.
    pub(crate) fn grad(&self) -> Option<RawTensor> {
        lock(&self.grad).clone()
    }

    /// Replaces (or clears) the accumulated gradient.
    pub(crate) fn set_grad(&self, grad: Option<RawTensor>) {
        *lock(&self.grad) = grad;
    }

    /// Runs `f` on the accumulated gradient, if there is one, where it is stored: an in-place
    /// op (loss scaling's `unscale_`) then writes the gradient's own buffer when no other
    /// handle holds it.
    pub(crate) fn update_grad(&self, f: impl FnOnce(&mut RawTensor) -> Result<()>) -> Result<()> {
        match lock(&self.grad).as_mut() {
            Some(g) => f(g),
            None => Ok(()),
        }
    }

    fn accumulate(&self, g: RawTensor) -> Result<()> {
        let mut slot = lock(&self.grad);
        let sum = match slot.take() {
            None => g.contiguous()?,
            Some(old) => add_grads(old, g)?,
        };
        *slot = Some(sum);
        Ok(())
    }
}

impl<R: ?Sized + Rule> Drop for Node<R> {
    /// Frees the graph behind this node without recursion, as PyTorch's `deleteNode`: a long
    /// chain of ops (`total = total + loss` over a long run) would otherwise drop one node
    /// inside the other and overflow the stack. Inputs that this node held last are taken
    /// apart on a heap list instead, so a graph of any depth drops in constant stack space.
    /// The list is only allocated when such an input has inputs of its own: dropping the
    /// result of an op on parameters (held elsewhere) allocates nothing.
    fn drop(&mut self) {
        // The usual case: every input is still held elsewhere (a parameter, a value an op
        // saved), so dropping them frees nothing and cannot recurse.
        if self
            .inputs
            .iter()
            .flatten()
            .all(|n| Arc::strong_count(n) > 1)
        {
            return;
        }
        fn take_apart(mut node: Arc<Node>, pending: &mut Vec<Arc<Node>>) {
            // Only the sole handle takes the node apart (its inputs moved to the list, then the
            // node dropped with none); shared nodes stay for their other users and drop later,
            // the same way. Where two threads drop the last two handles at once, both may see
            // the other's: the last one out then drops the node whole, and its own `drop` takes
            // its inputs apart, one level deeper, never more.
            if let Some(node) = Arc::get_mut(&mut node) {
                pending.extend(node.inputs.take().into_nodes());
            }
        }
        let mut pending = Vec::new();
        for input in self.inputs.take().into_nodes() {
            take_apart(input, &mut pending);
        }
        while let Some(node) = pending.pop() {
            take_apart(node, &mut pending);
        }
    }
}

/// `a + b` for gradients, reusing `a`'s buffer when nothing else holds it.
pub(crate) fn add_grads(a: RawTensor, b: RawTensor) -> Result<RawTensor> {
    crate::ops::binary::binary(Operand::Owned(a), Operand::Owned(b), BinaryOp::Add)
}

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// True unless inside [`no_grad`] (or a [`NoGradGuard`]) on this thread.
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// Turns gradient recording off on this thread until dropped (PyTorch's `torch.no_grad()`
/// context manager). Ops inside return untracked results, save nothing, and cost nothing extra.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::autograd::{is_grad_enabled, NoGradGuard};
/// {
///     let _guard = NoGradGuard::new();
///     assert!(!is_grad_enabled());
/// }
/// assert!(is_grad_enabled());
/// ```
#[must_use = "recording stays off only while the guard lives: `let _guard = NoGradGuard::new();`"]
pub struct NoGradGuard {
    previous: bool,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl NoGradGuard {
    /// Turns recording off until the guard is dropped.
    pub fn new() -> Self {
        let previous = GRAD_ENABLED.with(|g| g.replace(false));
        NoGradGuard {
            previous,
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Default for NoGradGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for NoGradGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.previous));
    }
}

/// Runs `f` with gradient recording off (PyTorch's `with torch.no_grad():`), as for evaluation.
///
/// ```
/// use devtype::prelude::*;
/// let w = Tensor::parameter(Tensor::<Cpu>::ones([2], Cpu));
/// let y = no_grad(|| &w * 2.0f32);
/// assert!(!y.requires_grad());
/// ```
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    let _guard = NoGradGuard::new();
    f()
}

/// Records an op whose inputs have the nodes `inputs` (`None` for untracked inputs).
///
/// Returns `None`, without calling `make`, when recording is off or no input is tracked, so an
/// untracked op saves no tensor. Otherwise `make` gets which inputs need a gradient and returns
/// the backward rule, which must return one entry per input.
#[inline(always)]
pub(crate) fn record<F>(
    name: &'static str,
    inputs: &[Option<&Arc<Node>>],
    make: impl FnOnce(&[bool]) -> F,
) -> Option<Arc<Node>>
where
    F: FnOnce(RawTensor) -> Result<Grads> + Send + 'static,
{
    // The test every op makes, inlined into it; the recording itself is out of line.
    if inputs.iter().all(Option::is_none) || !is_grad_enabled() {
        return None;
    }
    record_node(name, inputs, make)
}

#[inline(never)]
fn record_node<F>(
    name: &'static str,
    inputs: &[Option<&Arc<Node>>],
    make: impl FnOnce(&[bool]) -> F,
) -> Option<Arc<Node>>
where
    F: FnOnce(RawTensor) -> Result<Grads> + Send + 'static,
{
    // Which inputs want a gradient; on the stack for the usual few inputs.
    let mut few = [false; 8];
    let many: Vec<bool>;
    let needs: &[bool] = if inputs.len() <= few.len() {
        for (need, input) in few.iter_mut().zip(inputs) {
            *need = input.is_some();
        }
        &few[..inputs.len()]
    } else {
        many = inputs.iter().map(Option::is_some).collect();
        &many
    };
    // The node, rule inside, is written where it stays, field by field into an allocation made
    // first: built on the stack and moved in, it was copied (`memcpy`) and read back with wide
    // loads right after its narrow stores, a store-forwarding stall per copy (perf: `memmove`
    // was a fifth of a tracked `Linear(10, 2)`'s samples on Zen 4).
    let rank = 1 + inputs.iter().flatten().map(|n| n.rank).max().unwrap_or(0);
    let node = Arc::<Node<Once<F>>>::new_uninit();
    // Written through the pointer rather than `Arc::get_mut`, whose check of the counts is a
    // locked instruction (a fifth of this function's samples); this handle is the only one.
    let slot = Arc::as_ptr(&node).cast_mut().cast::<Node<Once<F>>>();
    // SAFETY: `slot` points to the new allocation (`Arc::as_ptr` keeps the allocation's own
    // pointer, valid for writes), which no other handle or reference can reach; every field
    // is written once, through raw pointers (no reference to the uninitialised node is made).
    // The rule is made first: if `make` panics, nothing has been written, nothing leaks.
    unsafe {
        (&raw mut (*slot).backward).write(Mutex::new(Once(Some(make(needs)))));
        (&raw mut (*slot).rank).write(rank);
        (&raw mut (*slot).name).write(name);
        (&raw mut (*slot).inputs).write(NodeInputs::new(inputs));
        (&raw mut (*slot).grad).write(Mutex::new(None));
        (&raw mut (*slot).leaf).write(false);
    }
    // SAFETY: every field was written just above.
    let node: Arc<Node<Once<F>>> = unsafe { node.assume_init() };
    Some(node)
}

/// Back-propagates `grad` (the gradient of the root's value) through everything reachable
/// from `root`, accumulating into the leaves, and frees the rules it ran.
pub(crate) fn backward(root: &Arc<Node>, grad: RawTensor) -> Result<()> {
    let mut order = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![root.clone()];
    while let Some(node) = stack.pop() {
        if !seen.insert(Node::address(&node)) {
            continue;
        }
        for input in node.inputs.iter().flatten() {
            if !seen.contains(&Node::address(input)) {
                stack.push(input.clone());
            }
        }
        order.push(node);
    }
    order.sort_unstable_by_key(|n| std::cmp::Reverse(n.rank));
    // Gradients waiting for their node, by its address (every node in `order` lives until the
    // end of this function, so no address is reused meanwhile).
    let key = Node::address;
    let mut pending: HashMap<usize, RawTensor> = HashMap::new();
    pending.insert(key(root), grad);
    let _no_grad = NoGradGuard::new();
    for node in &order {
        let Some(g) = pending.remove(&key(node)) else {
            continue;
        };
        if node.leaf {
            node.accumulate(g)?;
            continue;
        }
        // The rule runs under its node's lock (a second backward through the same node, from
        // another thread, waits and then finds it freed).
        let ran = lock(&node.backward).run_once(g);
        let grads = ran
            .ok_or_else(|| Error::Autograd(BACKWARD_TWICE.into()))?
            .map_err(|error| match error {
                Error::InBackward { .. } => error,
                error => Error::InBackward {
                    node: node.name,
                    error: Box::new(error),
                },
            })?;
        debug_assert_eq!(
            grads.len(),
            node.inputs.len(),
            "{}: one gradient per input",
            node.name
        );
        for (input, g) in node.inputs.iter().zip(grads) {
            let (Some(input), Some(g)) = (input, g) else {
                continue;
            };
            let sum = match pending.remove(&key(input)) {
                Some(old) => add_grads(old, g)?,
                None => g,
            };
            pending.insert(key(input), sum);
        }
    }
    Ok(())
}

/// An op's tensor argument as the shared backward rules see it: the value and, if tracked,
/// its node.
///
/// Public only so that a public trait's hidden method can name it; it is not reachable from
/// outside.
#[derive(Clone, Copy)]
pub struct In<'a> {
    pub(crate) value: &'a RawTensor,
    pub(crate) node: Option<&'a Arc<Node>>,
}

/// An op's result: the value and the node that made it (`None` when nothing is tracked).
pub(crate) struct Out {
    pub(crate) value: RawTensor,
    pub(crate) node: Option<Arc<Node>>,
}

impl Out {
    /// An untracked result.
    #[inline(always)]
    pub(crate) fn untracked(value: RawTensor) -> Self {
        Out { value, node: None }
    }

    /// This result as the input of the next op.
    #[inline]
    pub(crate) fn input(&self) -> In<'_> {
        In {
            value: &self.value,
            node: self.node.as_ref(),
        }
    }
}

/// PyTorch's error for `backward` on a tensor that no tracked op made.
pub(crate) fn no_grad_fn() -> Error {
    Error::Autograd("element 0 of tensors does not require grad and does not have a grad_fn".into())
}

/// Checks the gradient given to `backward_with` against the output: same shape, same dtype.
pub(crate) fn check_backward_grad(output: &RawTensor, grad: &RawTensor) -> Result<()> {
    if grad.shape() != output.shape() {
        return Err(Error::Autograd(format!(
            "Mismatch in shape: grad_output[0] has a shape of {:?} and output[0] has a shape of {:?}.",
            grad.shape(),
            output.shape()
        )));
    }
    if grad.dtype != output.dtype {
        return Err(dtype_mismatch(grad.dtype, output.dtype));
    }
    Ok(())
}

/// `torch.<name>` of a dtype, as PyTorch prints dtypes.
fn torch_dtype_name(dtype: crate::core::DType) -> &'static str {
    dtype.torch_name()
}

/// A gradient for `backward_with` of another dtype than the output, in the words of
/// `torch.autograd`'s shape check (PyTorch words the dtype check of complex outputs this way;
/// devtype does not convert silently, so every dtype mismatch gets it).
fn dtype_mismatch(grad: crate::core::DType, output: crate::core::DType) -> Error {
    Error::Autograd(format!(
        "Mismatch in dtype: grad_output[0] has a dtype of {} and output[0] has a dtype of {}.",
        torch_dtype_name(grad),
        torch_dtype_name(output)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::layout::Dims;

    /// An error from a rule deep in the graph names that node (not the root), and keeps the
    /// rule's error and its text.
    #[test]
    fn a_failing_rule_names_its_node() {
        let leaf = Node::leaf();
        let inner = record("MulBackward0", &[Some(&leaf)], |_| {
            |_g: RawTensor| -> Result<Grads> { Err(Error::Shape("the rule's own text".into())) }
        })
        .unwrap();
        let root = record("AddBackward0", &[Some(&inner)], |_| {
            |g: RawTensor| -> Result<Grads> { Ok(vec![Some(g)]) }
        })
        .unwrap();
        let g = RawTensor::from_cpu_vec(vec![1.0f32], Dims::EMPTY);
        let err = backward(&root, g).unwrap_err();
        assert_eq!(err.backward_node(), Some("MulBackward0"));
        assert_eq!(err.to_string(), "the rule's own text");
        assert_eq!(
            err.root_cause(),
            &Error::Shape("the rule's own text".into())
        );
        assert!(!err.is_device_mismatch());
        // An error of the engine itself (a second backward) names no node.
        let again = backward(&root, RawTensor::from_cpu_vec(vec![1.0f32], Dims::EMPTY));
        assert_eq!(again.unwrap_err().backward_node(), None);
    }

    fn value(v: f32) -> RawTensor {
        RawTensor::from_cpu_vec(vec![v], Dims::shape(&[1]).unwrap())
    }

    fn grad_of(leaf: &Node) -> f32 {
        leaf.grad().unwrap().cpu_slice::<f32>().unwrap()[0]
    }

    /// A node keeps its inputs inline up to `FEW_INPUTS` and in a list past that: either way
    /// the backward pass hands input `i` the `i`-th gradient, skips untracked inputs, and
    /// dropping the graph frees it.
    #[test]
    fn inputs_inline_or_listed_get_their_own_gradients() {
        for n in [1, 2, FEW_INPUTS, FEW_INPUTS + 1, 7] {
            let leaves: Vec<Arc<Node>> = (0..n).map(|_| Node::leaf()).collect();
            // Input 1 (when there is one) is untracked.
            let inputs: Vec<Option<&Arc<Node>>> = leaves
                .iter()
                .enumerate()
                .map(|(i, l)| (i != 1).then_some(l))
                .collect();
            let node = record("TestBackward", &inputs, |needs| {
                let needs = needs.to_vec();
                move |_g| {
                    Ok(needs
                        .iter()
                        .enumerate()
                        .map(|(i, &need)| need.then(|| value(10.0 + i as f32)))
                        .collect())
                }
            })
            .expect("tracked inputs record a node");
            assert_eq!(node.inputs.len(), n);
            backward(&node, value(1.0)).unwrap();
            for (i, leaf) in leaves.iter().enumerate() {
                if i == 1 {
                    assert!(leaf.grad().is_none(), "n = {n}: input 1 is untracked");
                } else {
                    assert_eq!(grad_of(leaf), 10.0 + i as f32, "n = {n}, input {i}");
                }
            }
            drop(node);
            assert!(leaves.iter().all(|l| Arc::strong_count(l) == 1), "n = {n}");
        }
    }

    /// A gradient's one `f32`.
    fn scalar(g: &RawTensor) -> f32 {
        g.cpu_slice::<f32>().unwrap()[0]
    }

    /// Ranks, not creation order, order the backward pass: a chain of six ops built on another
    /// thread and a branch of one built after it meet at the root, and the leaf gets both
    /// paths' gradients (2^6 + 3) only if every node runs after all of its consumers. Each
    /// rule is freed once it has run, with what it saved.
    #[test]
    fn ranks_order_branches_of_any_length_from_any_thread() {
        let leaf = Node::leaf();
        let saved = Arc::new(());
        let times = |factor: f32, input: &Arc<Node>| {
            let saved = saved.clone();
            record("MulBackward0", &[Some(input)], move |_| {
                move |g: RawTensor| -> Result<Grads> {
                    let _keep = &saved;
                    Ok(vec![Some(value(factor * scalar(&g)))])
                }
            })
            .unwrap()
        };
        let chain = std::thread::scope(|s| {
            s.spawn(|| (0..6).fold(leaf.clone(), |node, _| times(2.0, &node)))
                .join()
                .unwrap()
        });
        let branch = times(3.0, &leaf);
        assert_eq!((chain.rank, branch.rank), (6, 1));
        let root = record("AddBackward0", &[Some(&chain), Some(&branch)], |_| {
            |g: RawTensor| -> Result<Grads> { Ok(vec![Some(g.clone()), Some(g)]) }
        })
        .unwrap();
        assert_eq!(root.rank, 7);
        assert_eq!(Arc::strong_count(&saved), 8);
        backward(&root, value(1.0)).unwrap();
        assert_eq!(grad_of(&leaf), 67.0);
        assert_eq!(Arc::strong_count(&saved), 1, "the rules that ran are freed");
        let again = backward(&root, value(1.0)).unwrap_err();
        assert_eq!(again.to_string(), BACKWARD_TWICE);
    }

    /// Two threads back-propagate through one graph at once: the root's rule runs once, under
    /// its node's lock, so one thread succeeds, the other gets PyTorch's second-backward
    /// error, and the leaf gets one gradient. A rule that panics leaves its node freed, not
    /// locked: the next backward through it is the same error, not a hang.
    #[test]
    fn one_backward_wins_and_a_panicking_rule_leaves_no_lock() {
        for _ in 0..20 {
            let leaf = Node::leaf();
            let mid = record("MulBackward0", &[Some(&leaf)], |_| {
                |g: RawTensor| -> Result<Grads> { Ok(vec![Some(value(2.0 * scalar(&g)))]) }
            })
            .unwrap();
            let root = record("MulBackward0", &[Some(&mid)], |_| {
                |g: RawTensor| -> Result<Grads> { Ok(vec![Some(value(3.0 * scalar(&g)))]) }
            })
            .unwrap();
            let results: Vec<Result<()>> = std::thread::scope(|s| {
                let runs: Vec<_> = (0..2)
                    .map(|_| s.spawn(|| backward(&root, value(1.0))))
                    .collect();
                runs.into_iter().map(|r| r.join().unwrap()).collect()
            });
            assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
            let lost = results.into_iter().find_map(Result::err).unwrap();
            assert_eq!(lost.to_string(), BACKWARD_TWICE);
            assert_eq!(grad_of(&leaf), 6.0);
        }
        let leaf = Node::leaf();
        let root = record("PanicBackward", &[Some(&leaf)], |_| {
            |_g: RawTensor| -> Result<Grads> { panic!("a rule's bug") }
        })
        .unwrap();
        let caught =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| backward(&root, value(1.0))));
        assert!(caught.is_err());
        let again = backward(&root, value(1.0)).unwrap_err();
        assert_eq!(again.to_string(), BACKWARD_TWICE);
    }
}
