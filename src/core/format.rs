//! Number formatting shared by error texts and tensor printing.

/// Writes the exponent of Rust's `1.2346e8` / `1e-5` as C's printf and Python do:
/// `1.2346e+08`, `1e-05`. Text without an exponent comes back unchanged.
pub(crate) fn c_style_exponent(s: String) -> String {
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => s,
    }
}
