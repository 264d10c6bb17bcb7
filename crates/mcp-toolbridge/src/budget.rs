//! Result budgets: a tool result too large for a model's context reaches it as a head and a tail with a marker, while the whole result waits in a spill file the model pages through with `read_mcp_result`.
//!
//! A budget counts characters (Unicode scalar values) of the text a result
//! puts in front of the model; 100,000 by default, about 25,000 tokens at
//! four characters a token. Over it, every text block of the result is
//! joined into one spill file and the model gets one text block: the
//! first two thirds of the budget, a marker naming what was cut and the
//! spilled result's id, and the last third. Structured content has a
//! budget of its own: over it, the model gets a note with the id instead
//! (validation of the content against the tool's output schema has
//! already happened by then). Image and audio blocks over the media
//! budget are replaced by a note; they are not spilled.
//!
//! A tool may state the largest result it needs in its `_meta`
//! ([`ResultBudget::HINT_KEY`]): the hint lowers that tool's budget, and
//! raises it only as far as the host's [`ResultBudget::max_chars`] allows.
//!
//! Spill files are owner-only, in a directory of the session's own (under
//! [`ResultBudget::spill_dir`] or the system's temp dir), removed when the
//! last clone of the session is dropped. Making the directory, writing a
//! spill (up to the result's whole size) and reading one back run on
//! tokio's blocking threads, never on a runtime worker, and no lock is held
//! while they do.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mcp_proto::types::ContentBlock;
use serde_json::Value;

use crate::result::ToolResult;

/// How much of a tool result reaches the model, and where the rest goes.
///
/// ```
/// use mcp_toolbridge::{ResultBudget, SessionOptions};
///
/// let budget = ResultBudget::default().chars(20_000).tool("files", "read", 200_000);
/// let options = SessionOptions::default().budget(Some(budget));
/// assert_eq!(options.budget.unwrap().chars_for("files", "read"), 200_000);
/// ```
#[derive(Clone, Debug, derive_setters::Setters)]
#[non_exhaustive]
pub struct ResultBudget {
    /// Characters of text one result may put in front of the model.
    /// Default 100,000 (25,000 tokens at four characters each); at least
    /// [`ResultBudget::MIN_CHARS`].
    pub chars: usize,
    /// Per-server budgets, by server id, over [`ResultBudget::chars`].
    #[setters(skip)]
    pub per_server: BTreeMap<String, usize>,
    /// Per-tool budgets, by (server id, tool name), over the server's.
    #[setters(skip)]
    pub per_tool: BTreeMap<(String, String), usize>,
    /// Characters of structured content (as compact JSON). Default 100,000.
    pub structured_chars: usize,
    /// Decoded bytes of one image or audio block. Default 5 MiB.
    pub media_bytes: usize,
    /// The directory the session's spill directory is made in. Default
    /// `None`: the system's temp dir.
    #[setters(strip_option)]
    pub spill_dir: Option<PathBuf>,
    /// How far a tool's own size hint ([`ResultBudget::HINT_KEY`] in the
    /// tool's `_meta`) may raise its budget. Default `None`: a hint may
    /// only lower the budget the host set; with a maximum, a hint may raise
    /// it up to that maximum, never past it.
    #[setters(strip_option)]
    pub max_chars: Option<usize>,
}

impl Default for ResultBudget {
    fn default() -> Self {
        ResultBudget {
            chars: 100_000,
            per_server: BTreeMap::new(),
            per_tool: BTreeMap::new(),
            structured_chars: 100_000,
            media_bytes: 5 * 1024 * 1024,
            spill_dir: None,
            max_chars: None,
        }
    }
}

impl ResultBudget {
    /// The smallest budget: room for a marker and some text around it.
    pub const MIN_CHARS: usize = 1_000;

    /// The key of a tool's `_meta` (MCP "Tools" §Tool: `_meta` is free for
    /// implementations) under which servers state the largest result, in
    /// characters, the tool's results need: the name servers already write
    /// for hosts that honour it, a positive integer.
    pub const HINT_KEY: &'static str = "anthropic/maxResultSizeChars";

    /// The size hint a tool's `_meta` carries ([`ResultBudget::HINT_KEY`]),
    /// when it is a positive integer.
    pub fn hint_of(tool: &mcp_proto::types::Tool) -> Option<usize> {
        let hint = tool.meta.as_ref()?.get(Self::HINT_KEY)?.as_u64()?;
        (hint > 0).then(|| usize::try_from(hint).unwrap_or(usize::MAX))
    }

    /// The text budget of `server`'s `tool` given the tool's own size hint
    /// (see [`ResultBudget::hint_of`]): the host's budget
    /// ([`ResultBudget::chars_for`]) lowered to the hint, or raised to it up
    /// to [`ResultBudget::max_chars`] when the host set one; never below
    /// [`ResultBudget::MIN_CHARS`].
    pub fn chars_with_hint(&self, server: &str, tool: &str, hint: Option<usize>) -> usize {
        let host = self.chars_for(server, tool);
        let Some(hint) = hint else {
            return host;
        };
        let ceiling = self.max_chars.map_or(host, |max| max.max(host));
        hint.min(ceiling).max(Self::MIN_CHARS)
    }

    /// The same budget with `chars` for every tool of `server`.
    pub fn server(mut self, server: impl Into<String>, chars: usize) -> Self {
        self.per_server.insert(server.into(), chars);
        self
    }

    /// The same budget with `chars` for one tool.
    pub fn tool(
        mut self,
        server: impl Into<String>,
        tool: impl Into<String>,
        chars: usize,
    ) -> Self {
        self.per_tool.insert((server.into(), tool.into()), chars);
        self
    }

    /// The text budget of `server`'s `tool`: the tool's, else the server's,
    /// else [`ResultBudget::chars`], never below [`ResultBudget::MIN_CHARS`].
    pub fn chars_for(&self, server: &str, tool: &str) -> usize {
        self.per_tool
            .get(&(server.to_owned(), tool.to_owned()))
            .or_else(|| self.per_server.get(server))
            .copied()
            .unwrap_or(self.chars)
            .max(Self::MIN_CHARS)
    }
}

/// What a spilled result holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SpillKind {
    /// The result's text blocks, joined by line breaks.
    Text,
    /// The result's structured content, as JSON.
    Json,
}

#[derive(Debug)]
struct Spilled {
    path: PathBuf,
    kind: SpillKind,
    chars: usize,
    /// The byte offset of every [`MARK_STRIDE`]th character, so that a page
    /// is read from near its start instead of from the file's.
    marks: Vec<usize>,
}

/// Characters between two marks of a spilled file.
const MARK_STRIDE: usize = 4096;

#[derive(Debug, Default)]
struct State {
    next: u64,
    files: HashMap<String, Spilled>,
}

/// The session's spilled results.
#[derive(Debug, Default)]
pub(crate) struct Spills {
    /// The session's directory, made on the first spill.
    dir: tokio::sync::OnceCell<tempfile::TempDir>,
    /// Held for a few instructions at a time, never across I/O.
    state: Mutex<State>,
}

/// The name of the tool that pages through a spilled result.
pub const READ_MCP_RESULT: &str = "read_mcp_result";

impl Spills {
    /// `result` within `budget` for `server`'s `tool`: what does not fit
    /// is spilled (a spill that cannot be written still cuts the result,
    /// and the marker says the rest is lost).
    pub(crate) async fn apply(
        &self,
        mut result: ToolResult,
        budget: &ResultBudget,
        server: &str,
        tool: &str,
        hint: Option<usize>,
    ) -> ToolResult {
        let chars = budget.chars_with_hint(server, tool, hint);
        let mut notes = Vec::new();

        // Media first: their notes count against the text budget.
        let media_limit = budget.media_bytes;
        for block in &mut result.content {
            let (kind, mime, data) = match block {
                ContentBlock::Image(image) => ("image", &image.mime_type, &image.data),
                ContentBlock::Audio(audio) => ("audio", &audio.mime_type, &audio.data),
                _ => continue,
            };
            let bytes = data.len() / 4 * 3;
            if bytes > media_limit {
                *block = ContentBlock::text(format!(
                    "[{kind} ({}) of about {bytes} bytes left out: over this session's {media_limit}-byte budget]",
                    crate::text::truncate_chars(mime, 64)
                ));
            }
        }

        if let Some(structured) = &result.structured_content {
            let json = serde_json::to_string(structured).unwrap_or_default();
            let count = json.chars().count();
            if count > budget.structured_chars {
                let note = match self
                    .spill(budget, SpillKind::Json, Arc::new(json), count)
                    .await
                {
                    Ok(spill) => format!(
                        "[structured content of {count} characters is not shown; it is spilled result {} ({}): call {READ_MCP_RESULT} with {{\"id\": \"{}\", \"path\": \"/...\"}} to read a part]",
                        spill.0,
                        spill.1.display(),
                        spill.0
                    ),
                    Err(error) => format!(
                        "[structured content of {count} characters is not shown, and could not be kept: {error}]"
                    ),
                };
                result.structured_content = None;
                notes.push(note);
            }
        }

        let text_chars: usize = result
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.chars().count()),
                _ => None,
            })
            .sum();
        let note_chars: usize = notes.iter().map(|n| n.chars().count() + 1).sum();
        if text_chars + note_chars > chars {
            let mut joined = String::new();
            let mut first_text = None;
            let mut kept = Vec::with_capacity(result.content.len());
            for block in result.content {
                match block {
                    ContentBlock::Text(text) => {
                        if first_text.is_none() {
                            first_text = Some(kept.len());
                        } else {
                            joined.push('\n');
                        }
                        joined.push_str(&text.text);
                    }
                    other => kept.push(other),
                }
            }
            let total = joined.chars().count();
            // Shared with the blocking thread that writes it, not copied.
            let joined = Arc::new(joined);
            let spilled = self
                .spill(budget, SpillKind::Text, Arc::clone(&joined), total)
                .await;
            let room = chars.saturating_sub(note_chars);
            let cut = cut_with_marker(&joined, total, room, &spilled);
            kept.insert(first_text.unwrap_or(0), ContentBlock::text(cut));
            result.content = kept;
        }
        if !notes.is_empty() {
            result.content.push(ContentBlock::text(notes.join("\n")));
        }
        result
    }

    /// Writes `text` to a new owner-only spill file, on a blocking thread:
    /// its id and path.
    async fn spill(
        &self,
        budget: &ResultBudget,
        kind: SpillKind,
        text: Arc<String>,
        chars: usize,
    ) -> Result<(String, PathBuf), String> {
        let parent = budget.spill_dir.clone().unwrap_or_else(std::env::temp_dir);
        let dir = self
            .dir
            .get_or_try_init(|| async move {
                tokio::task::spawn_blocking(move || make_spill_dir(&parent))
                    .await
                    .map_err(|e| format!("cannot make a spill directory: {e}"))?
            })
            .await?
            .path()
            .to_owned();
        let id = {
            let mut state = mcp_proto::sync::lock(&self.state);
            state.next += 1;
            format!("result-{}", state.next)
        };
        let extension = match kind {
            SpillKind::Text => "txt",
            SpillKind::Json => "json",
        };
        let path = dir.join(format!("{id}.{extension}"));
        let target = path.clone();
        let marks = tokio::task::spawn_blocking(move || {
            #[cfg(test)]
            tests::note_io_thread(&target);
            write_private(&target, &text)?;
            Ok::<_, String>(
                text.char_indices()
                    .step_by(MARK_STRIDE)
                    .map(|(at, _)| at)
                    .collect(),
            )
        })
        .await
        .map_err(|e| format!("cannot write {}: {e}", path.display()))??;
        mcp_proto::sync::lock(&self.state).files.insert(
            id.clone(),
            Spilled {
                path: path.clone(),
                kind,
                chars,
                marks,
            },
        );
        Ok((id, path))
    }

    /// Up to `length` characters of spilled result `id` from `offset`, or
    /// of the JSON value at `path` in a spilled JSON result, with a footer
    /// saying where the next part starts.
    pub(crate) async fn read(
        &self,
        id: &str,
        offset: usize,
        length: usize,
        path: Option<&str>,
    ) -> Result<String, String> {
        let (file, kind, chars, mark) = {
            let state = mcp_proto::sync::lock(&self.state);
            let spilled = state.files.get(id).ok_or_else(|| {
                let mut known: Vec<&str> = state.files.keys().map(String::as_str).collect();
                known.sort_unstable();
                if known.is_empty() {
                    format!("no spilled result {id:?}: nothing was spilled in this session")
                } else {
                    format!("no spilled result {id:?}; spilled: {}", known.join(", "))
                }
            })?;
            // The last mark at or before `offset`: (its character, its byte).
            let index = (offset / MARK_STRIDE).min(spilled.marks.len().saturating_sub(1));
            let mark = spilled
                .marks
                .get(index)
                .map_or((0, 0), |byte| (index * MARK_STRIDE, *byte));
            (spilled.path.clone(), spilled.kind, spilled.chars, mark)
        };
        let request = PartRequest {
            id: id.to_owned(),
            file,
            kind,
            chars,
            mark,
            offset,
            length,
            pointer: path.map(str::to_owned),
        };
        let (part, chars) = tokio::task::spawn_blocking(move || {
            #[cfg(test)]
            tests::note_io_thread(&request.file);
            read_part(&request)
        })
        .await
        .map_err(|e| format!("cannot read spilled result {id}: {e}"))??;
        let end = offset + part.chars().count();
        let footer = if end < chars {
            format!(
                "\n[characters {offset}..{end} of {chars}; the next part starts at offset {end}]"
            )
        } else {
            format!("\n[characters {offset}..{end} of {chars}; the end]")
        };
        Ok(part + &footer)
    }
}

/// Makes the session's owner-only spill directory under `parent`.
fn make_spill_dir(parent: &Path) -> Result<tempfile::TempDir, String> {
    let dir = tempfile::Builder::new()
        .prefix("mcp-results-")
        .tempdir_in(parent)
        .map_err(|e| format!("cannot make a spill directory in {}: {e}", parent.display()))?;
    // Owner-only: results may hold anything a server returned.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot make {} owner-only: {e}", dir.path().display()))?;
    }
    Ok(dir)
}

/// Writes `text` to a new owner-only file at `path`.
fn write_private(path: &Path, text: &str) -> Result<(), String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// What [`read_part`] reads: the spilled file and the part asked for.
struct PartRequest {
    id: String,
    file: PathBuf,
    kind: SpillKind,
    chars: usize,
    /// The last mark at or before `offset`: (its character, its byte).
    mark: (usize, usize),
    offset: usize,
    length: usize,
    pointer: Option<String>,
}

/// Reads one part of a spilled result (blocking I/O): the part and the
/// character count of what it is a part of.
fn read_part(request: &PartRequest) -> Result<(String, usize), String> {
    let PartRequest {
        id,
        file,
        kind,
        chars,
        mark,
        offset,
        length,
        pointer,
    } = request;
    let (kind, chars, offset, length) = (*kind, *chars, *offset, *length);
    let unreadable = |e: std::io::Error| format!("cannot read spilled result {id}: {e}");
    match pointer.as_deref() {
        None | Some("") => {
            if offset >= chars && chars > 0 {
                return Err(past_the_end(id, offset, chars));
            }
            // From the mark, at most 4 bytes a character (UTF-8).
            let (mark_char, mark_byte) = *mark;
            let skip = offset - mark_char;
            let mut file = std::fs::File::open(file).map_err(unreadable)?;
            file.seek(std::io::SeekFrom::Start(mark_byte as u64))
                .map_err(unreadable)?;
            let mut bytes = Vec::new();
            file.take(((skip + length) * 4) as u64)
                .read_to_end(&mut bytes)
                .map_err(unreadable)?;
            // The window may end inside a character: keep what is whole.
            let text = match std::str::from_utf8(&bytes) {
                Ok(text) => text,
                Err(error) => {
                    std::str::from_utf8(&bytes[..error.valid_up_to()]).unwrap_or_default()
                }
            };
            Ok((text.chars().skip(skip).take(length).collect(), chars))
        }
        Some(pointer) => {
            if kind != SpillKind::Json {
                return Err(format!(
                    "spilled result {id} is text; `path` is for JSON results"
                ));
            }
            let text = std::fs::read_to_string(file).map_err(unreadable)?;
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| format!("spilled result {id} is not JSON: {e}"))?;
            let part = value
                .pointer(pointer)
                .ok_or_else(|| format!("spilled result {id} has nothing at {pointer:?}"))?;
            let text = match part {
                Value::String(s) => s.clone(),
                other => serde_json::to_string_pretty(other).unwrap_or_default(),
            };
            let chars = text.chars().count();
            if offset >= chars && chars > 0 {
                return Err(past_the_end(id, offset, chars));
            }
            Ok((text.chars().skip(offset).take(length).collect(), chars))
        }
    }
}

fn past_the_end(id: &str, offset: usize, chars: usize) -> String {
    format!("offset {offset} is past the end of spilled result {id} ({chars} characters)")
}

/// `text` (of `total` characters) cut to at most `room` characters: head,
/// marker, tail.
fn cut_with_marker(
    text: &str,
    total: usize,
    room: usize,
    spilled: &Result<(String, PathBuf), String>,
) -> String {
    let marker = |head: usize, tail_start: usize| match spilled {
        Ok((id, path)) => format!(
            "\n\n[... {} of {total} characters cut here (offsets {head}..{tail_start}). The whole result is spilled result {id} ({}): call {READ_MCP_RESULT} with {{\"id\": \"{id}\", \"offset\": {head}}} to read on ...]\n\n",
            tail_start - head,
            path.display()
        ),
        Err(error) => format!(
            "\n\n[... {} of {total} characters cut here (offsets {head}..{tail_start}); the rest could not be kept: {error} ...]\n\n",
            tail_start - head
        ),
    };
    // The marker's own length depends on the numbers in it: size it with
    // the widest they can be. `marker(0, total)` writes the cut and the
    // tail offset at their widest, and the head offset, which it holds
    // twice, as one digit each time.
    let marker_room = marker(0, total).chars().count() + 2 * total.to_string().len();
    let body = room.saturating_sub(marker_room);
    let head = body * 2 / 3;
    let tail = body - head;
    let tail_start = total - tail;
    let head_end = char_index(text, head);
    let tail_begin = char_index(text, tail_start);
    let mut out = String::with_capacity(head_end + marker_room + (text.len() - tail_begin));
    out.push_str(&text[..head_end]);
    out.push_str(&marker(head, tail_start));
    out.push_str(&text[tail_begin..]);
    out
}

/// The byte index of the `n`th character of `text` (its length past the end).
fn char_index(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text_result(text: &str) -> ToolResult {
        ToolResult::text(text)
    }

    fn shown(result: &ToolResult) -> String {
        result.joined_text()
    }

    /// The threads that did a spill's file I/O, by file: written by the
    /// blocking closures in test builds, read by the test below.
    static IO_THREADS: Mutex<Vec<(PathBuf, std::thread::ThreadId)>> = Mutex::new(Vec::new());

    pub(super) fn note_io_thread(file: &Path) {
        mcp_proto::sync::lock(&IO_THREADS).push((file.to_owned(), std::thread::current().id()));
    }

    /// The threads that did file I/O under `dir`.
    fn io_threads_under(dir: &Path) -> Vec<std::thread::ThreadId> {
        mcp_proto::sync::lock(&IO_THREADS)
            .iter()
            .filter(|(file, _)| file.starts_with(dir))
            .map(|(_, thread)| *thread)
            .collect()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn spilling_and_reading_back_run_off_the_runtime_worker() {
        // On a current-thread runtime the test's own thread is the only
        // worker: every write and read of the spill must run on another.
        let worker = std::thread::current().id();
        let dir = tempfile::tempdir().unwrap();
        let spills = Spills::default();
        let budget = ResultBudget::default()
            .chars(1_000)
            .spill_dir(dir.path().to_owned());
        let big = "z".repeat(16 << 20);
        let result = spills
            .apply(text_result(&big), &budget, "s", "t", None)
            .await;
        assert!(shown(&result).contains("spilled result result-1"));
        let part = spills.read("result-1", 8 << 20, 100, None).await;
        assert!(part.unwrap().starts_with(&"z".repeat(100)));
        let threads = io_threads_under(dir.path());
        assert_eq!(threads.len(), 2, "one write and one read: {threads:?}");
        assert!(
            threads.iter().all(|thread| *thread != worker),
            "a spill's file I/O ran on the runtime's only worker"
        );
    }

    #[tokio::test]
    async fn a_result_within_the_budget_is_untouched() {
        let spills = Spills::default();
        let budget = ResultBudget::default().chars(2_000);
        let result = spills
            .apply(text_result(&"x".repeat(2_000)), &budget, "s", "t", None)
            .await;
        assert_eq!(shown(&result), "x".repeat(2_000));
        assert!(spills.dir.get().is_none(), "nothing spilled");
    }

    #[tokio::test]
    async fn an_oversize_result_is_cut_within_the_budget_and_paged_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let spills = Spills::default();
        let budget = ResultBudget::default()
            .chars(2_000)
            .spill_dir(dir.path().to_owned());
        let text: String = (0..10_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let result = spills
            .apply(text_result(&text), &budget, "s", "t", None)
            .await;
        let model = shown(&result);
        assert!(model.chars().count() <= 2_000, "{}", model.chars().count());
        assert!(model.starts_with("abcdef"));
        assert!(model.ends_with(&text[text.len() - 100..]));
        assert!(model.contains("spilled result result-1"), "{model}");
        // Paging from the marker's offset returns the rest, then the end.
        let mut whole = String::new();
        let mut offset = 0;
        loop {
            let part = spills.read("result-1", offset, 3_000, None).await.unwrap();
            let (body, footer) = part.rsplit_once("\n[").unwrap();
            whole.push_str(body);
            offset += body.chars().count();
            if footer.contains("the end") {
                break;
            }
        }
        assert_eq!(whole, text);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let state = mcp_proto::sync::lock(&spills.state);
            let file = &state.files["result-1"].path;
            let mode = std::fs::metadata(file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let dir_mode = std::fs::metadata(file.parent().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(dir_mode & 0o777, 0o700);
        }
    }

    #[tokio::test]
    async fn the_cut_result_never_exceeds_the_budget_whatever_the_sizes() {
        let spills = Spills::default();
        for budget_chars in [1_000, 1_234, 20_000, 99_999] {
            for total in [budget_chars + 1, budget_chars * 2 + 7, 300_000, 1_048_576] {
                let budget = ResultBudget::default().chars(budget_chars);
                let result = spills
                    .apply(text_result(&"y".repeat(total)), &budget, "s", "t", None)
                    .await;
                let shown = shown(&result).chars().count();
                assert!(
                    shown <= budget_chars,
                    "{total} into {budget_chars}: {shown}"
                );
                assert!(
                    shown + 40 >= budget_chars,
                    "{total} into {budget_chars}: only {shown}"
                );
            }
        }
    }

    #[tokio::test]
    async fn multibyte_text_is_cut_on_character_boundaries() {
        let spills = Spills::default();
        let budget = ResultBudget::default().chars(1_000);
        let text = "é😀".repeat(5_000);
        let result = spills
            .apply(text_result(&text), &budget, "s", "t", None)
            .await;
        assert!(shown(&result).chars().count() <= 1_000);
        // Paged back across marks, whole, from wherever the pages start.
        let mut whole = String::new();
        let mut offset = 0;
        loop {
            let part = spills.read("result-1", offset, 1_500, None).await.unwrap();
            let (body, footer) = part.rsplit_once("\n[").unwrap();
            whole.push_str(body);
            offset += body.chars().count();
            if footer.contains("the end") {
                break;
            }
        }
        assert_eq!(whole, text);
    }

    #[tokio::test]
    async fn structured_content_over_its_budget_becomes_a_note_and_reads_by_path() {
        let spills = Spills::default();
        let budget = ResultBudget::default().structured_chars(1_000);
        let mut result = text_result("summary");
        let rows: Vec<Value> = (0..500).map(|i| serde_json::json!({"row": i})).collect();
        result.structured_content = Some(serde_json::json!({"rows": rows}));
        let result = spills.apply(result, &budget, "s", "t", None).await;
        assert!(result.structured_content.is_none());
        let model = shown(&result);
        assert!(model.starts_with("summary"));
        assert!(model.contains("spilled result result-1"), "{model}");
        let part = spills
            .read("result-1", 0, 100, Some("/rows/42"))
            .await
            .unwrap();
        assert!(part.starts_with("{\n  \"row\": 42\n}"), "{part}");
        assert!(
            spills
                .read("result-1", 0, 100, Some("/nope"))
                .await
                .is_err()
        );
        assert!(
            spills
                .read("result-9", 0, 100, None)
                .await
                .unwrap_err()
                .contains("result-1")
        );
    }

    #[tokio::test]
    async fn oversize_media_is_replaced_by_a_note() {
        let spills = Spills::default();
        let budget = ResultBudget::default().media_bytes(1_000);
        // 4,000 base64 characters: 3,000 bytes.
        let data = "A".repeat(4_000);
        let mut result = text_result("x");
        let image = serde_json::json!({"type": "image", "data": data, "mimeType": "image/png"});
        result.content.push(serde_json::from_value(image).unwrap());
        let result = spills.apply(result, &budget, "s", "t", None).await;
        assert!(shown(&result).contains("[image (image/png) of about 3000 bytes left out"));
    }

    #[tokio::test]
    async fn per_tool_and_per_server_budgets_take_precedence() {
        let budget = ResultBudget::default()
            .chars(5_000)
            .server("big", 50_000)
            .tool("big", "dump", 500_000)
            .tool("small", "t", 10);
        assert_eq!(budget.chars_for("other", "t"), 5_000);
        assert_eq!(budget.chars_for("big", "t"), 50_000);
        assert_eq!(budget.chars_for("big", "dump"), 500_000);
        assert_eq!(budget.chars_for("small", "t"), ResultBudget::MIN_CHARS);
    }

    #[tokio::test]
    async fn a_tools_hint_lowers_its_budget_and_raises_it_only_to_the_hosts_maximum() {
        let tool = |hint: serde_json::Value| {
            let mut tool = mcp_proto::types::Tool::new("t");
            let mut meta = serde_json::Map::new();
            meta.insert(ResultBudget::HINT_KEY.to_owned(), hint);
            tool.meta = Some(meta.into());
            tool
        };
        assert_eq!(ResultBudget::hint_of(&tool(json!(5000))), Some(5000));
        for bad in [
            json!(0),
            json!(-3),
            json!("500000"),
            json!(1.5),
            json!(null),
        ] {
            assert_eq!(ResultBudget::hint_of(&tool(bad.clone())), None, "{bad}");
        }
        assert_eq!(
            ResultBudget::hint_of(&mcp_proto::types::Tool::new("t")),
            None
        );

        let budget = ResultBudget::default().chars(20_000);
        assert_eq!(budget.chars_with_hint("s", "t", None), 20_000);
        assert_eq!(budget.chars_with_hint("s", "t", Some(8_000)), 8_000);
        assert_eq!(budget.chars_with_hint("s", "t", Some(500_000)), 20_000);
        assert_eq!(
            budget.chars_with_hint("s", "t", Some(10)),
            ResultBudget::MIN_CHARS
        );
        let raised = budget.max_chars(200_000);
        assert_eq!(raised.chars_with_hint("s", "t", Some(150_000)), 150_000);
        assert_eq!(raised.chars_with_hint("s", "t", Some(500_000)), 200_000);
        assert_eq!(raised.chars_with_hint("s", "t", None), 20_000);
    }
}
