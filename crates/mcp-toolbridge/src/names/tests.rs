//! Tests of model names: examples, then the properties every name must have.

use std::collections::HashSet;

use proptest::prelude::*;

use super::*;

fn assign(pairs: &[(&str, &str)]) -> ToolNames {
    ToolNames::assign(pairs.iter().copied(), &NameOptions::default())
}

fn check(pairs: &[(&str, &str)], expected: &[&str]) {
    let names = assign(pairs);
    let got: Vec<&str> = pairs
        .iter()
        .map(|(s, t)| names.name(s, t).unwrap_or("<none>"))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn always_suffixed_names_do_not_move_when_a_colliding_tool_arrives() {
    let options = NameOptions::default().suffix(Suffix::Always);
    let before = ToolNames::assign([("a.b", "c"), ("fs", "read")], &options);
    // `a_b` sanitizes to the same plain name as `a.b`: with suffixes only
    // when needed, the first name would change now.
    let after = ToolNames::assign([("a.b", "c"), ("fs", "read"), ("a_b", "c")], &options);
    for (server, tool) in [("a.b", "c"), ("fs", "read")] {
        let name = before.name(server, tool).unwrap();
        assert_eq!(after.name(server, tool), Some(name));
        let stem = format!("mcp_{}_{}_", sanitize(server), sanitize(tool));
        assert!(
            name.starts_with(&stem) && name.len() == stem.len() + 8,
            "{name}"
        );
    }
    assert_ne!(after.name("a_b", "c"), after.name("a.b", "c"));
    let plain = ToolNames::assign([("a.b", "c")], &NameOptions::default());
    let collided = ToolNames::assign([("a.b", "c"), ("a_b", "c")], &NameOptions::default());
    assert_ne!(plain.name("a.b", "c"), collided.name("a.b", "c"));
}

#[test]
fn plain_names_when_they_fit_and_are_unique() {
    check(
        &[("github", "create_issue"), ("fs", "read-file")],
        &["mcp_github_create_issue", "mcp_fs_read-file"],
    );
}

#[test]
fn characters_outside_the_alphabet_are_replaced() {
    check(&[("my.server", "tool/é ü")], &["mcp_my_server_tool____"]);
}

#[test]
fn colliding_names_both_get_suffixes() {
    let names = assign(&[("s", "a.b"), ("s", "a_b"), ("s", "c")]);
    let dotted = names.name("s", "a.b").unwrap();
    let plain = names.name("s", "a_b").unwrap();
    assert_ne!(dotted, plain);
    assert!(dotted.starts_with("mcp_s_a_b_") && dotted.len() == "mcp_s_a_b_".len() + 8);
    assert!(plain.starts_with("mcp_s_a_b_") && plain.len() == "mcp_s_a_b_".len() + 8);
    assert_eq!(names.name("s", "c"), Some("mcp_s_c"));
}

#[test]
fn server_tool_boundary_collisions_are_separated() {
    // `a_b` + `c` and `a` + `b_c` both read `mcp_a_b_c`.
    let names = assign(&[("a_b", "c"), ("a", "b_c")]);
    assert_ne!(names.name("a_b", "c"), names.name("a", "b_c"));
    assert_eq!(
        names.resolve(names.name("a", "b_c").unwrap()),
        Some(&ToolKey::new("a", "b_c"))
    );
}

#[test]
fn overlong_names_are_cut_and_suffixed() {
    let long = "x".repeat(200);
    let names = assign(&[("srv", &long)]);
    let name = names.name("srv", &long).unwrap();
    assert_eq!(name.len(), 64);
    assert!(name.starts_with("mcp_srv_xxxx"));
    assert!(is_valid_name(name, &NameOptions::default()));
}

#[test]
fn the_limit_is_configurable() {
    let options = NameOptions::with_max_len(32);
    let names = ToolNames::assign([("server", "a_rather_long_tool_name_here")], &options);
    let name = names
        .name("server", "a_rather_long_tool_name_here")
        .unwrap();
    assert_eq!(name.len(), 32);
    // Below the minimum the minimum applies.
    let tiny = ToolNames::assign(
        [("server", "a_rather_long_tool_name_here")],
        &NameOptions::with_max_len(3),
    );
    assert_eq!(
        tiny.name("server", "a_rather_long_tool_name_here")
            .unwrap()
            .len(),
        NameOptions::MIN_LEN
    );
}

#[test]
fn a_suffixed_name_equal_to_a_plain_name_is_separated() {
    // Find the suffixed name of an overlong tool, then add a second server
    // whose plain name is exactly that string.
    let long = "y".repeat(100);
    let first = assign(&[("s", &long)]);
    let taken = first.name("s", &long).unwrap().to_owned();
    let rest = taken.strip_prefix("mcp_t_").map(str::to_owned);
    // Shape a pair `("t", rest)` only if the prefix allows; otherwise build
    // one via the server part.
    let (server, tool) = match rest {
        Some(rest) => ("t".to_owned(), rest),
        None => {
            let body = taken.strip_prefix("mcp_").unwrap();
            let (server, tool) = body.split_once('_').unwrap();
            (server.to_owned(), tool.to_owned())
        }
    };
    let names = ToolNames::assign(
        [("s", long.as_str()), (server.as_str(), tool.as_str())],
        &NameOptions::default(),
    );
    let a = names.name("s", &long).unwrap();
    let b = names.name(&server, &tool).unwrap();
    assert_ne!(a, b);
    assert!(a.len() <= 64 && b.len() <= 64);
}

#[test]
fn unusable_tools_are_reported_with_a_reason() {
    let names = assign(&[("s", ""), ("s", "dup"), ("s", "dup"), ("s", "ok")]);
    assert_eq!(names.name("s", "ok"), Some("mcp_s_ok"));
    assert_eq!(names.name("s", "dup"), None);
    assert_eq!(
        names.unusable(),
        &[
            UnusableTool {
                server: "s".into(),
                tool: "".into(),
                reason: UnusableReason::EmptyName
            },
            UnusableTool {
                server: "s".into(),
                tool: "dup".into(),
                reason: UnusableReason::Duplicate { count: 2 }
            },
        ]
    );
    assert!(
        names.unusable()[1]
            .to_string()
            .contains("2 tools with this name")
    );
}

#[test]
fn reverse_map_gives_raw_pairs() {
    let names = assign(&[("a.b", "c d"), ("x", "y")]);
    for (name, key) in names.iter() {
        assert_eq!(names.name(&key.server, &key.tool), Some(name));
    }
    assert_eq!(names.resolve("mcp_x_y"), Some(&ToolKey::new("x", "y")));
    assert_eq!(names.resolve("mcp_nothing"), None);
}

#[test]
fn a_thousand_tools_from_ten_servers_never_collide() {
    let mut pairs = Vec::new();
    for s in 0..10 {
        for t in 0..100 {
            // Deliberately collision-prone: dots versus underscores, and
            // long shared prefixes.
            let tool = if t % 2 == 0 {
                format!("{}.tool.{t}", "prefix".repeat(10))
            } else {
                format!("{}_tool_{}", "prefix".repeat(10), t - 1)
            };
            pairs.push((format!("server.{s}"), tool));
        }
    }
    let names = ToolNames::assign(pairs.iter().map(|(s, t)| (s, t)), &NameOptions::default());
    assert_eq!(names.len(), 1000);
    assert!(names.unusable().is_empty());
    for (name, _) in names.iter() {
        assert!(is_valid_name(name, &NameOptions::default()), "{name}");
    }
}

/// Raw names: arbitrary Unicode, dotted names, 200-character names, and a
/// small alphabet that makes `a.b`/`a_b` style collisions likely.
fn raw_name() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-c._]{1,4}",
        "[a-z]{1,8}(\\.[a-z]{1,8}){0,3}",
        "[a-z_]{200}",
        "\\PC{0,80}",
    ]
}

fn pairs() -> impl Strategy<Value = Vec<(String, String)>> {
    let server = prop_oneof!["[a-c._]{1,3}", "[a-z]{1,10}", "\\PC{1,20}", "[a-z]{200}",];
    proptest::collection::vec((server, raw_name()), 0..60)
}

fn named(pairs: &[(String, String)], options: &NameOptions) -> Vec<Option<String>> {
    let names = ToolNames::assign(pairs.iter().map(|(s, t)| (s, t)), options);
    pairs
        .iter()
        .map(|(s, t)| names.name(s, t).map(str::to_owned))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn names_are_valid_unique_and_reversible(pairs in pairs(), max_len in prop_oneof![Just(64usize), 24usize..=128]) {
        let options = NameOptions::with_max_len(max_len);
        let names = ToolNames::assign(pairs.iter().map(|(s, t)| (s, t)), &options);
        let mut seen = HashSet::new();
        for (name, key) in names.iter() {
            prop_assert!(is_valid_name(name, &options), "{name:?}");
            prop_assert!(seen.insert(name.to_owned()), "{name:?} twice");
            prop_assert_eq!(names.name(&key.server, &key.tool), Some(name));
        }
        // Every distinct pair is either named or reported.
        let distinct: HashSet<&(String, String)> = pairs.iter().collect();
        prop_assert_eq!(names.len() + names.unusable().len(), distinct.len());
        for u in names.unusable() {
            let duplicated = pairs.iter().filter(|(s, t)| *s == u.server && *t == u.tool).count() > 1;
            prop_assert!(u.tool.is_empty() || duplicated, "{u}");
        }
    }

    #[test]
    fn names_do_not_depend_on_order(pairs in pairs().prop_shuffle(), seed in any::<u64>()) {
        let options = NameOptions::default();
        let before = named(&pairs, &options);
        let mut shuffled: Vec<usize> = (0..pairs.len()).collect();
        // A deterministic permutation from the seed (reversal plus rotation).
        shuffled.reverse();
        if !shuffled.is_empty() {
            let k = (seed % shuffled.len() as u64) as usize;
            shuffled.rotate_left(k);
        }
        let permuted: Vec<(String, String)> = shuffled.iter().map(|&i| pairs[i].clone()).collect();
        let after = named(&permuted, &options);
        for (j, &i) in shuffled.iter().enumerate() {
            prop_assert_eq!(&after[j], &before[i]);
        }
        // And the same set named twice gives the same names.
        prop_assert_eq!(named(&pairs, &options), before);
    }

    #[test]
    fn deliberate_collisions_are_separated(base in "[a-z]{1,6}", n in 1usize..6) {
        let variants = [".", "_", "/", " ", "é"];
        let pairs: Vec<(String, String)> = variants[..n]
            .iter()
            .map(|sep| ("srv".to_owned(), format!("{base}{sep}{base}")))
            .collect();
        let names = named(&pairs, &NameOptions::default());
        let unique: HashSet<&Option<String>> = names.iter().collect();
        prop_assert_eq!(unique.len(), n);
        prop_assert!(names.iter().all(Option::is_some));
    }
}
