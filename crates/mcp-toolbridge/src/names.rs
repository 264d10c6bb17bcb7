//! Model-facing tool names: `mcp_<server>_<tool>`, collision-free and within
//! a provider's length limit, with the reverse map back to the raw pair.
//!
//! The rules (`mcp_<server>_<tool>`, "tool names
//! include a server/tool hash to avoid normalization collisions and fit
//! common provider limits"):
//!
//! - characters outside `[A-Za-z0-9_-]` become `_`, one per Unicode scalar;
//! - a name that fits [`NameOptions::max_len`] and that no other pair of the
//!   set shares is used as is;
//! - otherwise (too long, or shared by two pairs after replacement) the name
//!   is cut short and ends with `_` and a hex suffix taken from the sha256 of
//!   the raw `(server, tool)` pair. Every pair of a colliding group gets one,
//!   so no pair is favoured by the order it arrived in;
//! - if suffixed names still collide (a suffixed name equal to another
//!   pair's plain name, or two suffixes sharing their first digits) the
//!   suffixes of the pairs involved grow until every name is unique.
//!
//! The assignment is a function of the *set* of pairs: the order servers
//! and tools arrive in never changes a name. Display labels (titles) never
//! enter a name and are never dispatch keys: [`ToolNames::resolve`] is the
//! only way back from a model name to a raw pair.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

use sha2::{Digest, Sha256};

/// Options for [`ToolNames::assign`].
#[derive(Clone, Debug, PartialEq, Eq, derive_setters::Setters)]
#[non_exhaustive]
pub struct NameOptions {
    /// The longest name, in characters. Default 64 (OpenAI's and
    /// Anthropic's limit); values under [`NameOptions::MIN_LEN`] count as
    /// that minimum.
    pub max_len: usize,
    /// Hex digits of the sha256 suffix added to overlong or colliding
    /// names. Default 8; clamped to 4..=16. Suffixes grow beyond this only
    /// to separate names that would still collide.
    pub hash_len: usize,
    /// Which names carry the suffix. Default [`Suffix::WhenNeeded`].
    pub suffix: Suffix,
}

/// Which model names end with the sha256 suffix of their `(server, tool)`
/// pair.
///
/// ```
/// use mcp_toolbridge::names::{NameOptions, Suffix, ToolNames};
///
/// let plain = ToolNames::assign([("github", "search")], &NameOptions::default());
/// assert_eq!(plain.name("github", "search"), Some("mcp_github_search"));
///
/// let always = NameOptions::default().suffix(Suffix::Always);
/// let hashed = ToolNames::assign([("github", "search")], &always);
/// let name = hashed.name("github", "search").unwrap();
/// assert!(name.starts_with("mcp_github_search_") && name.len() == "mcp_github_search_".len() + 8);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Suffix {
    /// Only names that are too long or that two pairs share after
    /// replacement (the default): most names read as `mcp_<server>_<tool>`.
    #[default]
    WhenNeeded,
    /// Every name: a name never changes when another server adds a tool
    /// whose name would collide, at the cost of eight characters each.
    Always,
}

impl NameOptions {
    /// The smallest usable [`NameOptions::max_len`]: room for `mcp_`, a few
    /// characters of the name and a suffix.
    pub const MIN_LEN: usize = 24;

    /// Options with a different length limit and the default suffix.
    pub fn with_max_len(max_len: usize) -> Self {
        NameOptions {
            max_len,
            ..NameOptions::default()
        }
    }

    fn effective_max_len(&self) -> usize {
        self.max_len.max(Self::MIN_LEN)
    }

    fn effective_hash_len(&self) -> usize {
        self.hash_len.clamp(4, 16)
    }
}

impl Default for NameOptions {
    fn default() -> Self {
        NameOptions {
            max_len: 64,
            hash_len: 8,
            suffix: Suffix::WhenNeeded,
        }
    }
}

/// A raw tool identity: the server's id and the tool's name exactly as the
/// server listed it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolKey {
    /// The server's id (its configuration key).
    pub server: String,
    /// The tool's name as the server listed it.
    pub tool: String,
}

impl ToolKey {
    /// A key from its two parts.
    pub fn new(server: impl Into<String>, tool: impl Into<String>) -> Self {
        ToolKey {
            server: server.into(),
            tool: tool.into(),
        }
    }
}

impl fmt::Display for ToolKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.server, self.tool)
    }
}

/// A tool that got no model name, and why. Reported, never dropped silently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnusableTool {
    /// The server's id.
    pub server: String,
    /// The tool's name as listed (possibly empty).
    pub tool: String,
    /// Why it got no name.
    pub reason: UnusableReason,
}

impl fmt::Display for UnusableTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tool {:?} of server {:?} is not exposed: {}",
            self.tool, self.server, self.reason
        )
    }
}

/// Why a tool got no model name.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnusableReason {
    /// The server listed a tool with an empty name.
    EmptyName,
    /// The server listed this name more than once, with possibly different
    /// schemas; none of them is exposed, since which one the server runs is
    /// unknowable.
    Duplicate {
        /// How many times the name was listed.
        count: usize,
    },
    /// No unique name within the length limit could be found (two pairs
    /// whose sha256 digests agree on every digit that fits).
    Unresolvable,
    /// The tool runs only as a task (`execution.taskSupport: "required"`,
    /// MCP 2025-11-25), which this bridge does not drive; a plain call
    /// would always fail.
    TaskRequired,
}

impl fmt::Display for UnusableReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnusableReason::EmptyName => f.write_str("the tool name is empty"),
            UnusableReason::Duplicate { count } => {
                write!(f, "the server lists {count} tools with this name")
            }
            UnusableReason::Unresolvable => {
                f.write_str("no unique name fits the provider's length limit")
            }
            UnusableReason::TaskRequired => {
                f.write_str("the tool can only run as a task, which this client does not do")
            }
        }
    }
}

/// Model names for a set of tools, both ways.
#[derive(Clone, Debug, Default)]
pub struct ToolNames {
    /// Model names by server, then tool: looked up without allocating.
    by_key: HashMap<String, HashMap<String, String>>,
    by_name: HashMap<String, ToolKey>,
    unusable: Vec<UnusableTool>,
}

impl ToolNames {
    /// Names every `(server, tool)` pair of `pairs`. The result depends only
    /// on the set of pairs (and their multiplicity, for duplicates), never
    /// on their order.
    pub fn assign<S, T>(pairs: impl IntoIterator<Item = (S, T)>, options: &NameOptions) -> Self
    where
        S: AsRef<str>,
        T: AsRef<str>,
    {
        let mut counts: BTreeMap<ToolKey, usize> = BTreeMap::new();
        for (server, tool) in pairs {
            *counts
                .entry(ToolKey::new(server.as_ref(), tool.as_ref()))
                .or_default() += 1;
        }
        let mut unusable = Vec::new();
        let mut candidates = Vec::new();
        for (key, count) in counts {
            if key.tool.is_empty() {
                unusable.push(UnusableTool {
                    server: key.server,
                    tool: key.tool,
                    reason: UnusableReason::EmptyName,
                });
            } else if count > 1 {
                unusable.push(UnusableTool {
                    server: key.server,
                    tool: key.tool,
                    reason: UnusableReason::Duplicate { count },
                });
            } else {
                candidates.push(Candidate::new(key));
            }
        }
        let names = resolve_collisions(candidates, options, &mut unusable);
        let mut by_key: HashMap<String, HashMap<String, String>> = HashMap::new();
        let mut by_name = HashMap::with_capacity(names.len());
        for (key, name) in names {
            match by_key.get_mut(&key.server) {
                Some(tools) => {
                    tools.insert(key.tool.clone(), name.clone());
                }
                None => {
                    let tools = HashMap::from([(key.tool.clone(), name.clone())]);
                    by_key.insert(key.server.clone(), tools);
                }
            }
            by_name.insert(name, key);
        }
        unusable.sort_by(|a, b| (&a.server, &a.tool).cmp(&(&b.server, &b.tool)));
        ToolNames {
            by_key,
            by_name,
            unusable,
        }
    }

    /// The model name of a raw pair, if it got one.
    pub fn name(&self, server: &str, tool: &str) -> Option<&str> {
        self.by_key.get(server)?.get(tool).map(String::as_str)
    }

    /// The raw pair behind a model name.
    pub fn resolve(&self, model_name: &str) -> Option<&ToolKey> {
        self.by_name.get(model_name)
    }

    /// The tools that got no name, sorted by server and tool.
    pub fn unusable(&self) -> &[UnusableTool] {
        &self.unusable
    }

    /// How many tools got a name.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether no tool got a name.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Every `(model name, raw pair)`, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ToolKey)> {
        self.by_name.iter().map(|(name, key)| (name.as_str(), key))
    }
}

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Whether `name` is a valid model name under `options`:
/// `^[A-Za-z0-9_-]{1,max_len}$`.
pub fn is_valid_name(name: &str, options: &NameOptions) -> bool {
    !name.is_empty()
        && name.len() <= options.effective_max_len()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// One pair being named: its plain name, the suffix length it currently
/// needs (`None`: the plain name) and its digest, computed once a suffix is
/// needed (most names never need one).
struct Candidate {
    key: ToolKey,
    plain: String,
    digest_hex: String,
    suffix: Option<usize>,
}

impl Candidate {
    fn new(key: ToolKey) -> Self {
        let plain = format!("mcp_{}_{}", sanitize(&key.server), sanitize(&key.tool));
        Candidate {
            key,
            plain,
            digest_hex: String::new(),
            suffix: None,
        }
    }

    /// Gives the name a suffix of `n` digest characters.
    fn set_suffix(&mut self, n: usize) {
        if self.digest_hex.is_empty() {
            self.digest_hex = digest_hex(&self.key);
        }
        self.suffix = Some(n);
    }

    fn name(&self, max_len: usize) -> Cow<'_, str> {
        match self.suffix {
            None => Cow::Borrowed(&self.plain),
            Some(n) => {
                // The plain name is ASCII, so bytes are characters.
                let keep = max_len - 1 - n;
                let stem = &self.plain[..self.plain.len().min(keep)];
                Cow::Owned(format!("{stem}_{}", &self.digest_hex[..n]))
            }
        }
    }
}

/// The sha256 of the pair, length-prefixed so that `("ab", "c")` and
/// `("a", "bc")` differ, as lowercase hex.
fn digest_hex(key: &ToolKey) -> String {
    let mut hasher = Sha256::new();
    hasher.update((key.server.len() as u64).to_be_bytes());
    hasher.update(key.server.as_bytes());
    hasher.update(key.tool.as_bytes());
    let digest = hasher.finalize();
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        hex.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    hex
}

/// Gives every candidate a unique name, or reports it unusable.
///
/// Each round groups candidates by their current name; every member of a
/// group of two or more gets a (longer) suffix. Members are treated alike,
/// so the outcome does not depend on the order of `candidates`. Suffix
/// lengths only grow, so the loop ends.
fn resolve_collisions(
    mut candidates: Vec<Candidate>,
    options: &NameOptions,
    unusable: &mut Vec<UnusableTool>,
) -> Vec<(ToolKey, String)> {
    let max_len = options.effective_max_len();
    let first = options.effective_hash_len();
    // The longest suffix that leaves room for `mcp_` and a separator.
    let longest = (max_len - 6).min(64);
    for c in &mut candidates {
        if c.plain.len() > max_len || options.suffix == Suffix::Always {
            c.set_suffix(first);
        }
    }
    loop {
        // Sorted by name, the members of a group are neighbours.
        let names: Vec<Cow<'_, str>> = candidates.iter().map(|c| c.name(max_len)).collect();
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_unstable_by(|&a, &b| names[a].cmp(&names[b]));
        let mut collided: Vec<usize> = (0..order.len())
            .filter(|&k| {
                let name = &names[order[k]];
                (k > 0 && names[order[k - 1]] == *name)
                    || order.get(k + 1).is_some_and(|&next| names[next] == *name)
            })
            .map(|k| order[k])
            .collect();
        if collided.is_empty() {
            let names: Vec<String> = names.into_iter().map(Cow::into_owned).collect();
            return candidates
                .into_iter()
                .zip(names)
                .map(|(c, name)| (c.key, name))
                .collect();
        }
        drop(names);
        let mut stuck = Vec::new();
        for &i in &collided {
            let c = &mut candidates[i];
            let suffix = match c.suffix {
                None => first,
                Some(n) if n < longest => (n + 4).min(longest),
                Some(_) => {
                    stuck.push(i);
                    continue;
                }
            };
            c.set_suffix(suffix);
        }
        if !stuck.is_empty() {
            // Remove from the back so earlier indices stay valid.
            stuck.sort_unstable();
            for i in stuck.into_iter().rev() {
                let c = candidates.swap_remove(i);
                unusable.push(UnusableTool {
                    server: c.key.server,
                    tool: c.key.tool,
                    reason: UnusableReason::Unresolvable,
                });
            }
        }
        collided.clear();
    }
}

#[cfg(test)]
mod tests;
