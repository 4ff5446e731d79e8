// The argument kinds `declare_ops!` knows, as a gate: `known_kinds!(op [kinds] tokens)`
// expands to `tokens` when every kind is known, and to one `compile_error!` naming the op and
// the kind otherwise, so a misspelt kind is reported as such instead of as an unrelated type
// error in the generated methods. It uses nothing else of the crate, so the doctests in
// `declare/mod.rs` include this file to check both outcomes.

/// Expands to the tokens after the kind list when every kind in it is known.
macro_rules! known_kinds {
    ($op:ident [] $($then:tt)*) => { $($then)* };
    ($op:ident [(impl OperandOn<D> $($bound:tt)*) $($rest:tt)*] $($then:tt)*) => {
        $crate::api::declare::known_kinds!($op [$($rest)*] $($then)*);
    };
    ($op:ident [(impl ArgumentOn<D> $($bound:tt)*) $($rest:tt)*] $($then:tt)*) => {
        $crate::api::declare::known_kinds!($op [$($rest)*] $($then)*);
    };
    ($op:ident [(impl $($bound:tt)*) $($rest:tt)*] $($then:tt)*) => {
        compile_error!(concat!(
            "declare_ops!: `", stringify!($op), "` has a tensor argument `(impl ",
            stringify!($($bound)*), ")`; a tensor argument's bounds start with `OperandOn<D>` ",
            "(element-wise: TensorIterator's device check) or `ArgumentOn<D>` (argument-checked)"
        ));
    };
    ($op:ident [$kind:ident $($rest:tt)*] $($then:tt)*) => {
        $crate::api::declare::known_kinds!(@value $op $kind [$($rest)*] $($then)*);
    };
    (@value $op:ident OptTensor $($tail:tt)*) => { $crate::api::declare::known_kinds!(@next $op $($tail)*); };
    (@value $op:ident Scalar $($tail:tt)*) => { $crate::api::declare::known_kinds!(@next $op $($tail)*); };
    (@value $op:ident Dims $($tail:tt)*) => { $crate::api::declare::known_kinds!(@next $op $($tail)*); };
    (@value $op:ident isize $($tail:tt)*) => { $crate::api::declare::known_kinds!(@next $op $($tail)*); };
    (@value $op:ident usize $($tail:tt)*) => { $crate::api::declare::known_kinds!(@next $op $($tail)*); };
    (@value $op:ident bool $($tail:tt)*) => { $crate::api::declare::known_kinds!(@next $op $($tail)*); };
    (@value $op:ident i64 $($tail:tt)*) => { $crate::api::declare::known_kinds!(@next $op $($tail)*); };
    (@value $op:ident f64 $($tail:tt)*) => { $crate::api::declare::known_kinds!(@next $op $($tail)*); };
    (@value $op:ident Reduction $($tail:tt)*) => { $crate::api::declare::known_kinds!(@next $op $($tail)*); };
    (@value $op:ident IndexItems $($tail:tt)*) => { $crate::api::declare::known_kinds!(@next $op $($tail)*); };
    (@value $op:ident Size2 $($tail:tt)*) => { $crate::api::declare::known_kinds!(@next $op $($tail)*); };
    (@value $op:ident $kind:ident $($tail:tt)*) => {
        compile_error!(concat!(
            "declare_ops!: `", stringify!($kind), "` (an argument of `", stringify!($op),
            "`) is not an argument kind; the kinds are a tensor `(impl OperandOn<D> + ..)` or ",
            "`(impl ArgumentOn<D> + ..)`, `OptTensor`, `Scalar`, `Dims`, and the plain types ",
            "`isize`, `usize`, `bool`, `i64`, `f64`, `Reduction`, `IndexItems`, `Size2` ",
            "(a new plain type is added to `known_kinds!` in src/api/declare/kinds.rs)"
        ));
    };
    (@next $op:ident [$($rest:tt)*] $($then:tt)*) => {
        $crate::api::declare::known_kinds!($op [$($rest)*] $($then)*);
    };
    ($op:ident [$other:tt $($rest:tt)*] $($then:tt)*) => {
        compile_error!(concat!(
            "declare_ops!: `", stringify!($other), "` (an argument of `", stringify!($op),
            "`) is not an argument kind; write a tensor as `(impl OperandOn<D> + ..)` or ",
            "`(impl ArgumentOn<D> + ..)`, or one of `OptTensor`, `Scalar`, `Dims`, `isize`, ",
            "`usize`, `bool`, `i64`, `f64`, `Reduction`, `IndexItems`, `Size2`"
        ));
    };
}

pub(crate) use known_kinds;
