//! The seed's pitfalls as compile errors. Each lesson is a file in `ui-tests/`, checked by
//! trybuild against the compiler's real output; the text here is included from those files,
//! so it cannot drift from what rustc says.
