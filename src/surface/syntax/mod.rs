//! What both readers of Rust source share: the surface analysis (`analyze`) and the
//! build-script evaluator (`buildscript`). The `macro_rules!` engine ([`mbe`]),
//! package-relative paths ([`paths`]), and recognising a std macro and `include!`'s literal
//! argument. Neither reader's internals are imported here, so both depend on this module and
//! never on each other's helpers.
//!
//! Architecture invariant: no IO, and nothing of `analyze` or `buildscript` is imported.

pub(crate) mod mbe;
pub(crate) mod paths;

use proc_macro2::TokenStream;
use syn::ext::IdentExt;

/// Whether a macro path names the std `include!`.
pub(crate) fn is_include(path: &syn::Path) -> bool {
    is_std_macro(path, "include")
}

/// `name!`, `std::name!`, `core::name!`, `::std::name!`.
pub(crate) fn is_std_macro(path: &syn::Path, name: &str) -> bool {
    let segs: Vec<_> = path.segments.iter().map(|s| s.ident.unraw().to_string()).collect();
    match segs.as_slice() {
        [n] => n == name,
        [k, n] => (k == "std" || k == "core") && n == name,
        _ => false,
    }
}

/// The argument of `include!`: a literal path, or something computed (OUT_DIR).
pub(crate) fn include_literal(tokens: &TokenStream) -> Option<String> {
    syn::parse2::<syn::LitStr>(tokens.clone()).ok().map(|l| l.value())
}

