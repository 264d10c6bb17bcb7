//! "Did you mean": the known name closest to a mistyped one.

/// The candidate most like `typed`, if one is close enough to be what was
/// meant (a Jaro-Winkler similarity of at least 0.8, or a prefix).
pub(crate) fn closest<'a>(
    typed: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .filter(|candidate| *candidate != typed)
        .map(|candidate| {
            let score = if candidate.starts_with(typed) || typed.starts_with(candidate) {
                1.0
            } else {
                strsim::jaro_winkler(typed, candidate)
            };
            (candidate, score)
        })
        .filter(|(_, score)| *score >= 0.8)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(candidate, _)| candidate)
}

/// The error for a tool `server` (from `source`) does not list; `known`
/// is what it lists.
pub(crate) fn unknown_tool_of(
    known: &[String],
    server: &str,
    source: Option<&mcp_config::SourceMeta>,
    tool: &str,
) -> crate::exit::CliError {
    let name = crate::sources::server_name(server, source);
    let hint = if known.is_empty() {
        format!("{name} lists no tools")
    } else {
        let guess = closest(tool, known.iter().map(String::as_str))
            .map_or_else(String::new, |name| {
                format!("did you mean `{}`? ", crate::output::line(name))
            });
        let known: Vec<_> = known.iter().map(|name| crate::output::line(name)).collect();
        format!("{guess}its tools: {}", known.join(", "))
    };
    crate::exit::CliError::usage(format!(
        "{name} has no tool `{}`",
        crate::output::line(tool)
    ))
    .hint(hint)
    .code("unknown_tool")
    .server(server)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_are_suggested_and_far_ones_not() {
        assert_eq!(closest("ecoh", ["echo", "add"]), Some("echo"));
        assert_eq!(closest("dmeo", ["demo", "everything"]), Some("demo"));
        assert_eq!(closest("word", ["word_count", "add"]), Some("word_count"));
        assert_eq!(closest("zzz", ["echo", "add"]), None);
    }
}
