//! Catalog search: ranks tools by how well their names and descriptions
//! match a free-text query (`searchTools`, lazy
//! loading), so that a host can keep hundreds of schemas out of the model's
//! context until one is asked for.
//!
//! The ranking is a plain weighted term match, deterministic and cheap:
//! per query word, a match in the tool's name weighs most, then its title,
//! then the server's id or name, then the description; tools matching more
//! of the query's words come first, ties go by model name.

use serde::Serialize;

use crate::text::{first_nonempty_line, truncate_chars};

/// The longest description in a search hit, in characters.
const HIT_DESCRIPTION_CHARS: usize = 200;

/// One tool as the index sees it. It does not hold the tool's model name,
/// which is the binding's: one entry serves every binding of its catalog.
#[derive(Clone, Debug)]
pub(crate) struct IndexEntry {
    pub(crate) server: String,
    pub(crate) tool: String,
    name_lower: String,
    /// The name's words, each followed by a space.
    name_words: String,
    title_lower: String,
    server_lower: String,
    description_lower: String,
    /// The description's words, each followed by a space.
    description_words: String,
    short_description: String,
}

impl IndexEntry {
    pub(crate) fn new(
        server_id: &str,
        server_name: &str,
        tool: &str,
        title: Option<&str>,
        description: Option<&str>,
    ) -> Self {
        let description = description.unwrap_or("");
        IndexEntry {
            server: server_id.to_owned(),
            tool: tool.to_owned(),
            name_lower: tool.to_lowercase(),
            name_words: joined(tool),
            title_lower: title.unwrap_or("").to_lowercase(),
            server_lower: format!("{} {}", server_id, server_name).to_lowercase(),
            description_lower: description.to_lowercase(),
            description_words: joined(description),
            short_description: first_nonempty_line(description)
                .map(|line| truncate_chars(line, HIT_DESCRIPTION_CHARS))
                .unwrap_or_default(),
        }
    }

    fn score(&self, name: &str, query: &Query) -> u32 {
        let mut score = 0;
        let mut matched = 0;
        for word in &query.words {
            let mut s = 0;
            if has_word(&self.name_words, word) {
                s += 8;
            } else if self.name_lower.contains(word.as_str()) {
                s += 5;
            }
            if self.title_lower.contains(word.as_str()) {
                s += 4;
            }
            if self.server_lower.contains(word.as_str()) {
                s += 2;
            }
            if has_word(&self.description_words, word) {
                s += 3;
            } else if word.chars().count() >= 3 && self.description_lower.contains(word.as_str()) {
                s += 1;
            }
            if s > 0 {
                matched += 1;
            }
            score += s;
        }
        if score == 0 {
            return 0;
        }
        if query.whole == self.name_lower || query.whole == name.to_lowercase() {
            score += 20;
        }
        // Covering more of the query beats matching one word many ways.
        score + 6 * matched
    }
}

/// One search result: enough to choose a tool, never its schema.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SearchHit {
    /// The tool's model name (for direct calls and `describe_tool`).
    pub name: String,
    /// The server's id (for `call_mcp_tool`).
    pub server: String,
    /// The tool's name on its server (for `call_mcp_tool`).
    pub tool: String,
    /// The first line of its description, shortened.
    pub description: String,
    /// The relevance score; higher is better.
    pub score: u32,
}

struct Query {
    words: Vec<String>,
    whole: String,
}

/// Ranks `entries` (each with its tool's model name) against `query` and
/// returns the best `limit`.
pub(crate) fn search<'a>(
    entries: impl IntoIterator<Item = (&'a str, &'a IndexEntry)>,
    query: &str,
    limit: usize,
) -> Vec<SearchHit> {
    let mut query_words = words(query);
    query_words.sort();
    query_words.dedup();
    if query_words.is_empty() {
        return Vec::new();
    }
    let query = Query {
        words: query_words,
        whole: query.trim().to_lowercase(),
    };
    let mut scored: Vec<(u32, &str, &IndexEntry)> = entries
        .into_iter()
        .map(|(name, e)| (e.score(name, &query), name, e))
        .filter(|(s, _, _)| *s > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(limit)
        .map(|(score, name, e)| SearchHit {
            name: name.to_owned(),
            server: e.server.clone(),
            tool: e.tool.clone(),
            description: e.short_description.clone(),
            score,
        })
        .collect()
}

/// The words of `text` (see [`words`]), each followed by a space, written
/// straight into one string.
fn joined(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    let mut in_word = false;
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower && in_word {
                out.push(' ');
            }
            previous_lower = c.is_lowercase() || c.is_numeric();
            out.extend(c.to_lowercase());
            in_word = true;
        } else {
            previous_lower = false;
            if in_word {
                out.push(' ');
                in_word = false;
            }
        }
    }
    if in_word {
        out.push(' ');
    }
    out
}

/// Whether `word` is one of the words of `joined` (a [`joined`] text).
fn has_word(joined: &str, word: &str) -> bool {
    joined.split_terminator(' ').any(|w| w == word)
}

/// Lowercase alphanumeric words, with `snake_case`, `kebab-case`, dotted
/// and `camelCase` names split into their parts.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower && !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = c.is_lowercase() || c.is_numeric();
            current.extend(c.to_lowercase());
        } else {
            previous_lower = false;
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(server: &str, tool: &str, description: &str) -> (String, IndexEntry) {
        (
            format!("mcp_{server}_{tool}"),
            IndexEntry::new(server, server, tool, None, Some(description)),
        )
    }

    fn search_catalog(query: &str, limit: usize) -> Vec<SearchHit> {
        let catalog = catalog();
        search(
            catalog.iter().map(|(name, entry)| (name.as_str(), entry)),
            query,
            limit,
        )
    }

    fn catalog() -> Vec<(String, IndexEntry)> {
        vec![
            entry(
                "github",
                "create_issue",
                "Creates an issue in a repository.",
            ),
            entry("github", "list_issues", "Lists the issues of a repository."),
            entry("github", "get_file", "Reads a file from a repository."),
            entry("fs", "read_file", "Reads a file from disk.\nSecond line."),
            entry("fs", "write_file", "Writes a file to disk."),
            entry(
                "weather",
                "forecast",
                "Weather forecast for a city; mentions issue nowhere.",
            ),
        ]
    }

    fn names(query: &str) -> Vec<String> {
        search_catalog(query, 10)
            .into_iter()
            .map(|h| h.name)
            .collect()
    }

    #[test]
    fn name_matches_rank_above_description_matches() {
        let hits = names("issue");
        assert_eq!(hits[0], "mcp_github_create_issue");
        assert_eq!(hits[1], "mcp_github_list_issues");
        assert_eq!(hits.last().unwrap(), "mcp_weather_forecast");
    }

    #[test]
    fn more_query_words_matched_ranks_higher() {
        assert_eq!(names("read file disk")[0], "mcp_fs_read_file");
        assert_eq!(names("file github")[0], "mcp_github_get_file");
    }

    #[test]
    fn exact_names_win_and_case_is_ignored() {
        assert_eq!(names("WRITE_FILE")[0], "mcp_fs_write_file");
        assert_eq!(names("mcp_fs_read_file")[0], "mcp_fs_read_file");
    }

    #[test]
    fn nothing_matches_nothing_is_returned() {
        assert!(names("kubernetes").is_empty());
        assert!(names("  ,, ").is_empty());
    }

    #[test]
    fn hits_carry_the_first_description_line_and_respect_the_limit() {
        let hits = search_catalog("file", 2);
        assert_eq!(hits.len(), 2);
        let read = search_catalog("read_file", 1).remove(0);
        assert_eq!(read.description, "Reads a file from disk.");
        assert_eq!(
            (read.server.as_str(), read.tool.as_str()),
            ("fs", "read_file")
        );
    }

    #[test]
    fn words_split_names_of_every_style() {
        assert_eq!(words("getFileContents"), ["get", "file", "contents"]);
        assert_eq!(words("read_file-now.v2"), ["read", "file", "now", "v2"]);
        assert_eq!(words("Ünïcode Wörds"), ["ünïcode", "wörds"]);
        assert_eq!(joined("getFileContents"), "get file contents ");
        for text in [
            "getFileContents",
            "read_file-now.v2",
            "Ünïcode Wörds",
            "  Lists ISSUES page-by-page, newest first.  ",
            "HTTPServer x2Y aB",
            "",
        ] {
            let listed: String = words(text).iter().map(|w| format!("{w} ")).collect();
            assert_eq!(joined(text), listed, "{text:?}");
        }
        assert!(has_word(&joined("read_file"), "file"));
        assert!(!has_word(&joined("read_file"), "fil"));
        assert!(!has_word(&joined(""), ""));
    }
}
