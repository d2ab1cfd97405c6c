//! The expander against expansions worked out by hand from rustc's rules (the differential
//! test against rustc itself is in tests/macro_expansion.rs).

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};

use super::*;

/// Print tokens with invisible groups shown as `«..»`: one space between tokens, none after a
/// joint punctuation (`::`, `=>`), braces padded as proc-macro2 prints them.
fn show(ts: TokenStream) -> String {
    let mut out = String::new();
    let mut glue = false;
    let tts: Vec<TokenTree> = ts.into_iter().collect();
    for (i, tt) in tts.iter().cloned().enumerate() {
        if !out.is_empty() && !glue {
            out.push(' ');
        }
        glue = false;
        match tt {
            TokenTree::Group(g) => {
                let inner = show(g.stream());
                let s = match g.delimiter() {
                    Delimiter::Parenthesis => format!("({inner})"),
                    Delimiter::Bracket => format!("[{inner}]"),
                    Delimiter::Brace if inner.is_empty() => "{ }".to_string(),
                    Delimiter::Brace => format!("{{ {inner} }}"),
                    Delimiter::None => format!("«{inner}»"),
                };
                out.push_str(&s);
            }
            TokenTree::Punct(p) => {
                out.push(p.as_char());
                glue = p.spacing() == proc_macro2::Spacing::Joint && (p.as_char() == '\'' || matches!(tts.get(i + 1), Some(TokenTree::Punct(_))));
            }
            other => out.push_str(&other.to_string()),
        }
    }
    out
}

fn def(body: &str, edition: Edition) -> MacroRules {
    MacroRules::parse(body.parse().unwrap(), edition, false).unwrap()
}

fn budget() -> Budget {
    Budget::flat(1_000_000, 100_000)
}

fn expand_with(rules: &MacroRules, input: &str) -> Result<String, ExpandError> {
    let krate: Vec<TokenTree> = "::dep".parse::<TokenStream>().unwrap().into_iter().collect();
    rules.expand(&input.parse().unwrap(), Span::call_site(), &krate, &mut budget()).map(show)
}

fn expand(body: &str, input: &str) -> Result<String, ExpandError> {
    expand_with(&def(body, Edition::E2021), input)
}

/// Expand, then expand again every `name!(..)` of the output (for recursive macros).
fn expand_deep(name: &str, body: &str, input: &str) -> String {
    let rules = def(body, Edition::E2021);
    let krate: Vec<TokenTree> = Vec::new();
    let mut b = budget();
    fn go(ts: TokenStream, name: &str, rules: &MacroRules, krate: &[TokenTree], b: &mut Budget, depth: u32) -> TokenStream {
        assert!(depth < 64, "runaway");
        let tts: Vec<TokenTree> = ts.into_iter().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < tts.len() {
            if let (TokenTree::Ident(id), Some(TokenTree::Punct(p)), Some(TokenTree::Group(g))) = (&tts[i], tts.get(i + 1), tts.get(i + 2))
                && id == name
                && p.as_char() == '!'
            {
                let e = rules.expand(&g.stream(), Span::call_site(), krate, b).unwrap();
                out.extend(go(e, name, rules, krate, b, depth + 1));
                i += 3;
                continue;
            }
            if let TokenTree::Group(g) = &tts[i] {
                out.push(TokenTree::Group(proc_macro2::Group::new(g.delimiter(), go(g.stream(), name, rules, krate, b, depth))));
            } else {
                out.push(tts[i].clone());
            }
            i += 1;
        }
        out.into_iter().collect()
    }
    show(go(input.parse().unwrap(), name, &rules, &krate, &mut b, 0))
}

#[test]
fn tokio_style_cfg_wrapper_over_items() {
    let body = r#"($($item:item)*) => { $( #[cfg(feature = "fs")] #[cfg_attr(docsrs, doc(cfg(feature = "fs")))] $item )* }"#;
    assert_eq!(
        expand(body, "pub mod fs; pub use fs::File;").unwrap(),
        "# [cfg (feature = \"fs\")] # [cfg_attr (docsrs , doc (cfg (feature = \"fs\")))] «pub mod fs ;» \
         # [cfg (feature = \"fs\")] # [cfg_attr (docsrs , doc (cfg (feature = \"fs\")))] «pub use fs :: File ;»"
    );
    assert_eq!(expand(body, "").unwrap(), "");
}

#[test]
fn mio_style_syscall_builds_a_path_from_a_fragment() {
    let body = r#"($fn: ident ( $($arg: expr),* $(,)* ) ) => {{
        let res = unsafe { libc::$fn($($arg, )*) };
        if res == -1 { Err(std::io::Error::last_os_error()) } else { Ok(res) }
    }}"#;
    let out = expand(body, "connect(fd, addr.as_ptr(), len)").unwrap();
    assert!(out.starts_with("{ let res = unsafe { libc :: connect («fd» , «addr . as_ptr ()» , «len» ,) } ;"), "{out}");
    // `$(,)*` takes any trailing commas.
    assert!(expand(body, "close(fd,,)").unwrap().contains("libc :: close («fd» ,)"));
}

#[test]
fn nested_repetitions_and_separators() {
    let body = "($($k:ident => [$($v:expr),*]);* $(;)?) => { $( fn $k() { $( $v; )* } )* }";
    assert_eq!(
        expand(body, "a => [1, 2]; b => []; c => [x()];").unwrap(),
        "fn a () { «1» ; «2» ; } fn b () { } fn c () { «x ()» ; }"
    );
    // A variable bound outside a repetition is reused inside it.
    let body = "($name:ident: $($f:ident),+) => { $( fn $f() -> &'static str { stringify!($name) } )+ }";
    assert_eq!(expand(body, "s: a, b").unwrap(), "fn a () -> &'static str { stringify ! (s) } fn b () -> &'static str { stringify ! (s) }");
    // Separators are rustc tokens: `=>` is one separator.
    let body = "($($a:ident)=>*) => { $($a)* }";
    assert_eq!(expand(body, "x => y => z").unwrap(), "x y z");
}

#[test]
fn arms_are_tried_in_order_and_dollar_crate_is_the_defining_crate() {
    let body = "(@inner $x:expr) => { $crate::inner($x) }; ($x:expr) => { $crate::outer($x) }; () => { 0 }";
    assert_eq!(expand(body, "@inner 1").unwrap(), ":: dep :: inner («1»)");
    assert_eq!(expand(body, "2").unwrap(), ":: dep :: outer («2»)");
    assert_eq!(expand(body, "").unwrap(), "0");
    assert_eq!(expand(body, "@other"), Err(ExpandError::NoArm));
}

#[test]
fn every_fragment_specifier() {
    let e = |m: &str, i: &str| expand(&format!("({m}) => {{ [$x] }}"), i);
    assert_eq!(e("$x:literal", "-1").unwrap(), "[«- 1»]");
    assert_eq!(e("$x:literal", "\"s\"").unwrap(), "[«\"s\"»]");
    assert_eq!(e("$x:lifetime", "'a").unwrap(), "['a]");
    assert_eq!(e("$x:vis fn", "pub(crate) fn").unwrap(), "[«pub (crate)»]");
    assert_eq!(e("$x:vis fn", "fn").unwrap(), "[«»]", "an empty `vis` is still a token");
    assert_eq!(e("$x:pat", "Some(1) | None").unwrap(), "[«Some (1) | None»]");
    assert_eq!(e("$x:pat_param | y", "Some(1) | y").unwrap(), "[«Some (1)»]");
    assert_eq!(e("$x:meta", "derive(Debug)").unwrap(), "[«derive (Debug)»]");
    assert_eq!(e("$x:block", "{ f(); }").unwrap(), "[«{ f () ; }»]");
    assert_eq!(e("$x:stmt", "let x = 1").unwrap(), "[let x = 1]");
    assert_eq!(e("$x:stmt", "f(x)").unwrap(), "[f (x)]");
    // Written with a turbofish, valid both as a type and as an expression path.
    assert_eq!(e("$x:path", "std::vec::Vec<u8>").unwrap(), "[«std :: vec :: Vec :: < u8 >»]");
    assert_eq!(e("$x:path", "R<Vec<u8>>::read").unwrap(), "[«R :: < Vec < u8 >>:: read»]");
    assert_eq!(e("$x:path", "FnMut(St::Item) -> U").unwrap(), "[«FnMut (St :: Item) -> U»]");
    // `;` alone is a statement (axum's `$($stmt:stmt)*` over `a = b; c;`).
    assert_eq!(expand("($($s:stmt)*) => { $([$s])* }", "a = b; c;").unwrap(), "[a = b] [;] [c] [;]");
    assert_eq!(e("$x:ty", "dyn A + Send").unwrap(), "[«dyn A + Send»]");
    assert_eq!(e("$x:ty", "&dyn A + B"), Err(ExpandError::NoArm), "rustc rejects the ambiguous `+` too");
    assert_eq!(e("$x:item", "struct S;").unwrap(), "[«struct S ;»]");
    assert_eq!(e("$x:ident", "r#type").unwrap(), "[r#type]");
    assert_eq!(e("$x:tt", "=>").unwrap(), "[=>]");
    assert_eq!(e("$x:tt", "'a").unwrap(), "['a]");
    // `_` is not an identifier fragment.
    assert_eq!(e("$x:ident", "_"), Err(ExpandError::NoArm));
}

#[test]
fn edition_sets_pat_and_expr() {
    let body = "($x:pat) => { [$x] }";
    assert_eq!(expand_with(&def(body, Edition::E2021), "A | B").unwrap(), "[«A | B»]");
    assert_eq!(expand_with(&def(body, Edition::E2018), "A | B"), Err(ExpandError::NoArm));
    let body = "($x:expr) => { [$x] }";
    assert_eq!(expand_with(&def(body, Edition::E2024), "_").unwrap(), "[«_»]");
    assert_eq!(expand_with(&def(body, Edition::E2021), "_"), Err(ExpandError::NoArm));
}

#[test]
fn fragments_passed_on_stay_one_token() {
    // pin-project-lite passes an empty `$vis` on and matches it again with `$proj_vis:vis`
    // at the end of a group: rustc sees one (empty) token there.
    let outer = def("($v:vis struct $i:ident) => { inner!([$v struct $i $v]) }", Edition::E2021);
    let krate: Vec<TokenTree> = Vec::new();
    let out = outer.expand(&"struct S".parse().unwrap(), Span::call_site(), &krate, &mut budget()).unwrap();
    let TokenTree::Group(args) = out.into_iter().nth(2).unwrap() else { panic!() };
    let inner = def("([$v:vis struct $i:ident $pv:vis]) => { [$i] }", Edition::E2021);
    let got = inner.expand(&args.stream(), Span::call_site(), &krate, &mut budget()).map(show);
    assert_eq!(got.unwrap(), "[S]");
    // A type passed to a `tt` matcher is one token tree.
    let outer = def("($t:ty) => { inner!($t) }", Edition::E2021);
    let out = outer.expand(&"Vec<u8>".parse().unwrap(), Span::call_site(), &krate, &mut budget()).unwrap();
    let TokenTree::Group(args) = out.into_iter().nth(2).unwrap() else { panic!() };
    let one = def("($x:tt) => { one }; ($($x:tt)*) => { many }", Edition::E2021);
    assert_eq!(one.expand(&args.stream(), Span::call_site(), &krate, &mut budget()).map(show).unwrap(), "one");
}

#[test]
fn expressions_stay_one_node() {
    // `$e * 2` with `$e = 1 + 1` parses as `(1 + 1) * 2`.
    let out = def("($e:expr) => { $e * 2 }", Edition::E2021)
        .expand(&"1 + 1".parse().unwrap(), Span::call_site(), &[], &mut budget())
        .unwrap();
    let e: syn::Expr = syn::parse2(out).unwrap();
    let syn::Expr::Binary(b) = e else { panic!("{e:?}") };
    assert!(matches!(b.op, syn::BinOp::Mul(_)));
}

#[test]
fn rustc_errors_are_errors() {
    // A repetition of identifiers followed by an identifier: rustc reports a local ambiguity.
    assert_eq!(expand("($($i:ident)* foo) => {}", "a b foo"), Err(ExpandError::Ambiguous));
    // A fragment that starts and does not parse stops the expansion (the next arm is not tried).
    assert_eq!(expand("(a $e:expr) => {}; ($($t:tt)*) => {}", "a if"), Err(ExpandError::Fragment(Frag::Expr2021)));
    // But a token that cannot begin the fragment just fails the arm.
    assert_eq!(expand("(a $e:expr) => { 1 }; ($($t:tt)*) => { 2 }", "a ;").unwrap(), "2");
    // Repetition counts must agree.
    assert!(matches!(
        expand("($($a:ident)* ; $($b:ident)*) => { $($a $b)* }", "x y ; z"),
        Err(ExpandError::Transcribe(TranscribeError::CountMismatch))
    ));
    assert!(matches!(
        expand("($($a:ident)*) => { $a }", "x"),
        Err(ExpandError::Transcribe(TranscribeError::StillRepeating(_)))
    ));
}

#[test]
fn tt_munchers_recurse() {
    let body = "() => { 0 }; ($x:tt $($rest:tt)*) => { 1 + count!($($rest)*) }";
    assert_eq!(expand_deep("count", body, "count!(a => 'b c)"), "1 + 1 + 1 + 1 + 0");
    let body = "(@acc [$($acc:tt)*]) => { [$($acc)*] }; (@acc [$($acc:tt)*] $x:ident $($rest:tt)*) => { rev!(@acc [$x $($acc)*] $($rest)*) }; ($($t:tt)*) => { rev!(@acc [] $($t)*) }";
    assert_eq!(expand_deep("rev", body, "rev!(a b c)"), "[c b a]");
}

#[test]
fn unbound_variables_are_kept_for_inner_definitions() {
    let body = "($name:ident) => { macro_rules! $name { ($x:expr) => { $x } } }";
    assert_eq!(expand(body, "inner").unwrap(), "macro_rules ! inner { ($ x : expr) => { $ x } }");
}

#[test]
fn local_inner_macros_call_through_dollar_crate() {
    let rules = MacroRules::parse("($x:expr) => { helper!($x) }".parse().unwrap(), Edition::E2018, true).unwrap();
    assert_eq!(expand_with(&rules, "1").unwrap(), ":: dep :: helper ! («1»)");
}

#[test]
fn budgets_bound_the_work() {
    let rules = def("($($x:tt)*) => { $($x $x $x $x)* }", Edition::E2021);
    let input: String = "a ".repeat(1000);
    let mut b = Budget::flat(1_000_000, 1000);
    let e = rules.expand(&input.parse().unwrap(), Span::call_site(), &[], &mut b).map(show).unwrap_err();
    assert!(matches!(&e, ExpandError::Budget(x) if x.limit.what == "test tokens"), "{e}");
    let mut b = Budget::flat(10, 100_000);
    let e = rules.expand(&input.parse().unwrap(), Span::call_site(), &[], &mut b).map(show).unwrap_err();
    assert!(matches!(&e, ExpandError::Budget(x) if x.limit.what == "test steps"), "{e}");
}

#[test]
fn long_repetitions() {
    let rules = def("($($e:expr),* $(,)?) => { [$($e),*] }", Edition::E2021);
    let input: String = (0..20_000).map(|i| format!("f({i}) + {i},")).collect();
    let mut b = Budget::flat(10_000_000, 10_000_000);
    let out = rules.expand(&input.parse().unwrap(), Span::call_site(), &[], &mut b).unwrap();
    let TokenTree::Group(g) = out.into_iter().next().unwrap() else { panic!() };
    let elems = g.stream().into_iter().filter(|t| matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::None)).count();
    assert_eq!(elems, 20_000);
}

#[test]
fn bad_definitions_are_errors() {
    let bad = |s: &str| MacroRules::parse(s.parse().unwrap(), Edition::E2021, false).is_err();
    assert!(bad("($x) => {}"));
    assert!(bad("($x:frag) => {}"));
    assert!(bad("($x:expr $x:expr) => {}"));
    assert!(bad("($($x:expr)) => {}"));
    assert!(bad("() => {} junk"));
    assert!(bad(""));
}

#[test]
fn a_fragment_matched_again_is_not_nested() {
    // libc's `c_enum!` passes `$field_vis:vis` through two levels: the second match must see
    // the same single invisible group, not one inside another.
    let body = "(@v [$($vis:vis $name:ident,)*]) => { $($vis const $name: u8 = 0;)* }; ($($vis:vis $name:ident,)*) => { c!(@v [$($vis $name,)*]) }";
    assert_eq!(expand_deep("c", body, "c!(a, pub b,)"), "«» const a : u8 = 0 ; «pub» const b : u8 = 0 ;");
}

mod properties {
    //! Random definitions and invocations: the expander never panics and never runs away;
    //! it expands or reports.
    use super::*;
    use proptest::prelude::*;

    fn token() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just("1".to_string()),
            Just("\"s\"".to_string()),
            Just("'l".to_string()),
            Just(",".to_string()),
            Just(";".to_string()),
            Just("=>".to_string()),
            Just("+".to_string()),
            Just("::".to_string()),
            Just("#".to_string()),
            Just("$x".to_string()),
            Just("$crate".to_string()),
        ]
    }

    fn frag() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            Just("tt"), Just("ident"), Just("expr"), Just("ty"), Just("pat"), Just("path"), Just("literal"),
            Just("lifetime"), Just("vis"), Just("block"), Just("stmt"), Just("item"), Just("meta"),
        ]
    }

    /// A matcher or transcriber: tokens, variables, repetitions and groups, nested.
    fn tree(vars: bool) -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            4 => token(),
            2 => (0..3usize, frag()).prop_map(move |(i, f)| if vars { format!("$v{i}:{f}") } else { format!("$v{i}") }),
        ];
        leaf.prop_recursive(4, 24, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("( {} )", v.join(" "))),
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[ {} ]", v.join(" "))),
                (prop::collection::vec(inner.clone(), 1..4), prop_oneof![Just(""), Just(","), Just(";")], prop_oneof![Just("*"), Just("+"), Just("?")])
                    .prop_map(|(v, sep, op)| format!("$( {} ) {} {}", v.join(" "), if op == "?" { "" } else { sep }, op)),
                prop::collection::vec(inner, 1..4).prop_map(|v| v.join(" ")),
            ]
        })
    }

    fn input() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![token(), Just("(a, 1)".to_string()), Just("{ b; }".to_string()), Just("x + 1".to_string()), Just("Vec<u8>".to_string())],
            0..12,
        )
        .prop_map(|v| v.join(" "))
    }

    /// A matcher as a structure, to derive an invocation that matches it.
    #[derive(Debug, Clone)]
    enum M {
        Tok(String),
        Var(&'static str),
        Rep(Vec<M>, &'static str, &'static str),
        Group(Vec<M>),
    }

    fn matcher() -> impl Strategy<Value = Vec<M>> {
        let leaf = prop_oneof![
            3 => prop_oneof![Just("a"), Just("=>"), Just(";"), Just("@"), Just("#")].prop_map(|t| M::Tok(t.to_string())),
            2 => frag().prop_map(M::Var),
        ];
        let node = leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                (prop::collection::vec(inner.clone(), 1..3), prop_oneof![Just(""), Just(","), Just(";")], prop_oneof![Just("*"), Just("+"), Just("?")])
                    .prop_map(|(v, sep, op)| M::Rep(v, if op == "?" { "" } else { sep }, op)),
                prop::collection::vec(inner, 0..3).prop_map(M::Group),
            ]
        });
        prop::collection::vec(node, 0..5)
    }

    fn sample(f: &str) -> &'static str {
        match f {
            "tt" => "z", "ident" => "q", "expr" => "x + 1", "ty" => "Vec<u8>", "pat" => "Some(1)", "path" => "m::n",
            "literal" => "7", "lifetime" => "'l", "vis" => "pub", "block" => "{ f(); }", "stmt" => "let y = 2",
            "item" => "struct S;", _ => "derive(X)",
        }
    }

    /// The matcher's text (variables numbered in order) and a call that follows it.
    fn render(ms: &[M], n: &mut usize, m: &mut String, call: &mut String) {
        for x in ms {
            match x {
                M::Tok(t) => {
                    m.push_str(&format!(" {t}"));
                    call.push_str(&format!(" {t}"));
                }
                M::Var(f) => {
                    m.push_str(&format!(" $v{n}:{f}"));
                    *n += 1;
                    call.push_str(&format!(" {}", sample(f)));
                }
                M::Group(inner) => {
                    let (mut mi, mut ci) = (String::new(), String::new());
                    render(inner, n, &mut mi, &mut ci);
                    m.push_str(&format!(" ({mi})"));
                    call.push_str(&format!(" ({ci})"));
                }
                M::Rep(inner, sep, op) => {
                    let (mut mi, mut ci) = (String::new(), String::new());
                    render(inner, n, &mut mi, &mut ci);
                    m.push_str(&format!(" $({mi}) {sep} {op}"));
                    let times = if *op == "?" { 1 } else { 2 };
                    for k in 0..times {
                        if k > 0 {
                            call.push_str(&format!(" {sep}"));
                        }
                        call.push_str(&ci);
                    }
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
        /// An invocation built from the matcher: it matches, or rustc too would call it
        /// ambiguous (or a fragment swallows the next token, as rustc's parser would).
        #[test]
        fn invocations_that_follow_the_matcher(ms in matcher()) {
            let (mut n, mut m, mut call) = (0, String::new(), String::new());
            render(&ms, &mut n, &mut m, &mut call);
            let body = format!("({m}) => {{ [{}] }}", (0..n).map(|i| format!("v{i}")).collect::<Vec<_>>().join(" "));
            let rules = MacroRules::parse(body.parse().unwrap(), Edition::E2021, false);
            let Ok(rules) = rules else { return Ok(()) };
            let mut b = Budget::flat(200_000, 20_000);
            match rules.expand(&call.parse().unwrap(), Span::call_site(), &[], &mut b) {
                Ok(_) | Err(ExpandError::Ambiguous) | Err(ExpandError::NoArm) | Err(ExpandError::Fragment(_)) => {}
                Err(e) => prop_assert!(false, "{e}: {m} <- {call}"),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
        #[test]
        fn expands_or_reports(arms in prop::collection::vec((tree(true), tree(false)), 1..4), call in input()) {
            let body: String = arms.iter().map(|(m, t)| format!("({m}) => {{ {t} }};")).collect();
            let Ok(ts) = body.parse::<TokenStream>() else { return Ok(()) };
            let Ok(rules) = MacroRules::parse(ts, Edition::E2021, false) else { return Ok(()) };
            let Ok(call) = call.parse::<TokenStream>() else { return Ok(()) };
            let mut b = Budget::flat(200_000, 20_000);
            let krate: Vec<TokenTree> = "::k".parse::<TokenStream>().unwrap().into_iter().collect();
            // Either result is fine; what matters is that it returns, within the budget.
            let _ = rules.expand(&call, Span::call_site(), &krate, &mut b);
            prop_assert!(b.steps.used() <= 200_000 && b.tokens.used() <= 20_000);
        }
    }
}
