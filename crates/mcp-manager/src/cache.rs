//! The tool cache (`MCPToolCache`): the last catalog of each server, keyed by config fingerprint.
//!
//! The startup gate turns a still-pending server's cached tools into
//! deferred tools, so a host starts at once when a server is slow. Entries
//! are keyed by [`mcp_config::fingerprint`], which covers exactly what
//! decides where and how a server is reached: a changed command, URL or
//! token is another key, so a stale catalog is never shown for another
//! server. The cache is best-effort: a failure to read or write it is
//! logged and never fails a server.
//!
//! Two implementations: [`MemoryToolCache`] (one process) and
//! [`JsonFileToolCache`] (a JSON file, written to a temp file in the same
//! directory and renamed over the old one, so a crashed process leaves the
//! old or the new file, never a mix; every change re-reads the file under a
//! lock first, so processes sharing it, a host and `mcpctl` say, keep each
//! other's entries).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use mcp_proto::Era;
use mcp_proto::types::Tool;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// What the cache keeps for one fingerprint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CachedTools {
    /// The server id the entry was written for (informational: the key is
    /// the fingerprint).
    pub server_id: String,
    /// The tools, exactly as listed.
    pub tools: Vec<Tool>,
    /// The server's instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Whether the listing was truncated.
    #[serde(default)]
    pub truncated: bool,
    /// When the entry was written, in milliseconds since the Unix epoch.
    #[serde(default)]
    pub saved_at_ms: u64,
    /// The protocol era the server spoke, so that the next connection to
    /// the same configuration skips the era probe (2026-07-28
    /// "Versioning": the era may be persisted per server configuration).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "era_serde")]
    pub era: Option<Era>,
    /// The protocol version the server spoke, for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
}

/// `"legacy"` / `"modern"` in the cache file; an unknown value reads as none.
mod era_serde {
    use mcp_proto::Era;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(era: &Option<Era>, s: S) -> Result<S::Ok, S::Error> {
        match era {
            Some(era) => s.serialize_str(era.as_str()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Era>, D::Error> {
        let value = Option::<String>::deserialize(d)?;
        Ok(match value.as_deref() {
            Some("legacy") => Some(Era::Legacy),
            Some("modern") => Some(Era::Modern),
            _ => None,
        })
    }
}

impl CachedTools {
    /// An entry stamped with the current time.
    pub fn new(server_id: impl Into<String>, tools: Vec<Tool>) -> Self {
        CachedTools {
            server_id: server_id.into(),
            tools,
            instructions: None,
            truncated: false,
            saved_at_ms: now_ms(),
            era: None,
            protocol_version: None,
        }
    }
}

/// Where the manager keeps catalogs between runs. Best-effort: report
/// problems with `tracing` and carry on.
#[async_trait]
pub trait ToolCache: Send + Sync + fmt::Debug + 'static {
    /// The entry for `fingerprint`, if any.
    async fn load(&self, fingerprint: &str) -> Option<CachedTools>;

    /// Replaces the entry for `fingerprint`.
    async fn store(&self, fingerprint: &str, entry: CachedTools);

    /// Forgets the entry for `fingerprint`.
    async fn remove(&self, fingerprint: &str);

    /// Replaces the entries of several fingerprints, in order. The manager
    /// hands over every write queued while the last one ran, so a cache
    /// that writes a whole file overrides this to write it once.
    async fn store_all(&self, entries: Vec<(String, CachedTools)>) {
        for (fingerprint, entry) in entries {
            self.store(&fingerprint, entry).await;
        }
    }

    /// The protocol era recorded for `fingerprint`, read before every
    /// connect. The default loads the whole entry; a cache that can read
    /// the one field cheaply overrides it.
    async fn era(&self, fingerprint: &str) -> Option<Era> {
        self.load(fingerprint).await.and_then(|entry| entry.era)
    }

    /// Whether there is an entry for `fingerprint`: none means the server
    /// never connected here (a first start). The default loads the entry;
    /// a cache that can tell without decoding overrides it.
    async fn contains(&self, fingerprint: &str) -> bool {
        self.load(fingerprint).await.is_some()
    }
}

/// A cache in memory, for one process (and for tests).
#[derive(Debug, Default)]
pub struct MemoryToolCache {
    entries: Mutex<HashMap<String, CachedTools>>,
}

impl MemoryToolCache {
    /// An empty cache.
    pub fn new() -> Self {
        MemoryToolCache::default()
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        mcp_proto::sync::lock(&self.entries).len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl ToolCache for MemoryToolCache {
    async fn load(&self, fingerprint: &str) -> Option<CachedTools> {
        mcp_proto::sync::lock(&self.entries)
            .get(fingerprint)
            .cloned()
    }

    async fn store(&self, fingerprint: &str, entry: CachedTools) {
        mcp_proto::sync::lock(&self.entries).insert(fingerprint.to_owned(), entry);
    }

    async fn remove(&self, fingerprint: &str) {
        mcp_proto::sync::lock(&self.entries).remove(fingerprint);
    }
}

/// The version of the cache file's format.
const FILE_VERSION: u32 = 1;

/// The file as read and written: entries stay raw JSON until one is asked
/// for, so reading a cache of many large catalogs costs a scan, not a
/// decode of every tool (the startup gate reads it while it waits).
#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    entries: BTreeMap<String, Box<RawValue>>,
}

/// One entry in memory.
#[derive(Debug)]
struct RawEntry {
    saved_at_ms: u64,
    raw: Box<RawValue>,
}

/// The one field eviction needs, read without decoding the tools.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stamp {
    #[serde(default)]
    saved_at_ms: u64,
}

type Entries = BTreeMap<String, RawEntry>;

/// A cache in one JSON file: `{"version": 1, "entries": {fingerprint: {...}}}`.
///
/// The file is read on first use. Every write takes an advisory lock on
/// `<file>.lock` (across processes), reads the file again, applies its
/// changes and rewrites the file whole (atomically: temp file in the same
/// directory, then rename; owner-only on POSIX, as `tempfile` creates it),
/// so that processes sharing the file never drop each other's entries;
/// loads see the file as of the last read or write, and never wait for a
/// write in progress. Writes are serialized; a store of an entry the file
/// already holds unchanged (apart from its timestamp, when that is less
/// than [`JsonFileToolCache::REFRESH_AFTER_MS`] old) writes nothing, so a
/// warm start of unchanged servers leaves the file alone. A missing file
/// is an empty cache; a malformed or newer-version file is logged, treated
/// as empty, and replaced on the next store (it is only a cache); so is a
/// malformed entry, alone. At most [`JsonFileToolCache::max_entries`]
/// entries are kept; the oldest go first.
pub struct JsonFileToolCache {
    path: PathBuf,
    max_entries: usize,
    /// This process's view of the file; held only to read or swap it.
    view: tokio::sync::Mutex<Option<Arc<Entries>>>,
    /// Held across a write, so this process's writes land in order.
    writer: tokio::sync::Mutex<()>,
}

impl fmt::Debug for JsonFileToolCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonFileToolCache")
            .field("path", &self.path)
            .field("max_entries", &self.max_entries)
            .finish_non_exhaustive()
    }
}

impl JsonFileToolCache {
    /// The default bound on entries: 256.
    pub const DEFAULT_MAX_ENTRIES: usize = 256;

    /// How old an unchanged entry's timestamp may grow before a store
    /// rewrites it anyway (one day), so that eviction, oldest first, still
    /// spares the servers in use.
    pub const REFRESH_AFTER_MS: u64 = 24 * 60 * 60 * 1000;

    /// A cache at `path`. Does no I/O until first used.
    pub fn open(path: impl Into<PathBuf>) -> Self {
        JsonFileToolCache {
            path: path.into(),
            max_entries: Self::DEFAULT_MAX_ENTRIES,
            view: tokio::sync::Mutex::new(None),
            writer: tokio::sync::Mutex::new(()),
        }
    }

    /// Changes the bound on entries (at least 1).
    pub fn with_max_entries(mut self, max_entries: usize) -> Self {
        self.max_entries = max_entries.max(1);
        self
    }

    /// The bound on entries.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entries, read from the file on first use.
    async fn entries(&self) -> Arc<Entries> {
        let mut view = self.view.lock().await;
        if let Some(entries) = view.as_ref() {
            return Arc::clone(entries);
        }
        let path = self.path.clone();
        let loaded = tokio::task::spawn_blocking(move || read_file(&path))
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "reading the tool cache did not complete");
                Entries::new()
            });
        let loaded = Arc::new(loaded);
        *view = Some(Arc::clone(&loaded));
        loaded
    }

    /// The raw entry for `fingerprint` in this process's view.
    async fn raw(&self, fingerprint: &str) -> Option<Box<RawValue>> {
        let entries = self.entries().await;
        entries.get(fingerprint).map(|entry| entry.raw.clone())
    }

    /// Applies `change` to the file's current entries under the
    /// cross-process lock, writes them back when `change` changed them, and
    /// keeps them as this process's view.
    async fn update(&self, change: impl FnOnce(&mut Entries) -> bool + Send + 'static) {
        let _writer = self.writer.lock().await;
        let path = self.path.clone();
        let max_entries = self.max_entries;
        let outcome = tokio::task::spawn_blocking(move || {
            let _lock = lock_file(&path)?;
            let mut entries = read_file(&path);
            if change(&mut entries) {
                evict(&mut entries, max_entries);
                write_file(&path, &entries)?;
            }
            std::io::Result::Ok(entries)
        })
        .await;
        match outcome {
            Ok(Ok(entries)) => *self.view.lock().await = Some(Arc::new(entries)),
            Ok(Err(error)) => {
                tracing::warn!(path = %self.path.display(), %error, "cannot write the tool cache");
            }
            Err(error) => tracing::warn!(%error, "writing the tool cache did not complete"),
        }
    }
}

/// Whether `existing` holds `entry` already, apart from a timestamp that
/// is still recent enough to keep.
fn unchanged(existing: &RawEntry, entry: &CachedTools) -> bool {
    if entry.saved_at_ms.saturating_sub(existing.saved_at_ms) >= JsonFileToolCache::REFRESH_AFTER_MS
    {
        return false;
    }
    match serde_json::from_str::<CachedTools>(existing.raw.get()) {
        Ok(held) => {
            held == CachedTools {
                saved_at_ms: held.saved_at_ms,
                ..entry.clone()
            }
        }
        Err(_) => false,
    }
}

/// Keeps at most `max_entries`, dropping the oldest first.
fn evict(entries: &mut Entries, max_entries: usize) {
    while entries.len() > max_entries {
        let oldest = entries
            .iter()
            .min_by_key(|(_, e)| e.saved_at_ms)
            .map(|(k, _)| k.clone());
        match oldest {
            Some(key) => entries.remove(&key),
            None => break,
        };
    }
}

/// The advisory lock beside the cache file, `<file>.lock`; released when
/// the returned file is dropped. Never renamed over, unlike the cache file,
/// so every process locks the same inode.
fn lock_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    let lock_path = path.with_file_name(name);
    if let Some(dir) = lock_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)?;
    file.lock()?;
    Ok(file)
}

#[async_trait]
impl ToolCache for JsonFileToolCache {
    async fn load(&self, fingerprint: &str) -> Option<CachedTools> {
        let raw = self.raw(fingerprint).await?;
        match serde_json::from_str(raw.get()) {
            Ok(entry) => Some(entry),
            Err(error) => {
                tracing::warn!(path = %self.path.display(), %error, "malformed tool cache entry; ignoring it");
                None
            }
        }
    }

    /// Finds the entry without decoding it.
    async fn contains(&self, fingerprint: &str) -> bool {
        self.raw(fingerprint).await.is_some()
    }

    /// Reads only the entry's `era` (the tools are skipped, not decoded).
    async fn era(&self, fingerprint: &str) -> Option<Era> {
        #[derive(Deserialize)]
        struct EraOnly {
            #[serde(default, with = "era_serde")]
            era: Option<Era>,
        }
        let raw = self.raw(fingerprint).await?;
        serde_json::from_str::<EraOnly>(raw.get()).ok()?.era
    }

    async fn store(&self, fingerprint: &str, entry: CachedTools) {
        self.store_all(vec![(fingerprint.to_owned(), entry)]).await;
    }

    /// One read and at most one write of the file for all of `entries`.
    async fn store_all(&self, entries: Vec<(String, CachedTools)>) {
        let mut encoded = Vec::with_capacity(entries.len());
        for (key, entry) in entries {
            match serde_json::value::to_raw_value(&entry) {
                Ok(raw) => encoded.push((key, entry, raw)),
                Err(error) => tracing::warn!(%error, "cannot encode a tool cache entry"),
            }
        }
        if encoded.is_empty() {
            return;
        }
        self.update(move |file| {
            let mut changed = false;
            for (key, entry, raw) in encoded {
                if file.get(&key).is_some_and(|held| unchanged(held, &entry)) {
                    continue;
                }
                let saved_at_ms = entry.saved_at_ms;
                file.insert(key, RawEntry { saved_at_ms, raw });
                changed = true;
            }
            changed
        })
        .await;
    }

    async fn remove(&self, fingerprint: &str) {
        let key = fingerprint.to_owned();
        self.update(move |entries| entries.remove(&key).is_some())
            .await;
    }
}

fn read_file(path: &Path) -> Entries {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Entries::new(),
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "cannot read the tool cache; starting empty");
            return Entries::new();
        }
    };
    let file = match serde_json::from_str::<CacheFile>(&text) {
        Ok(file) if file.version == FILE_VERSION => file,
        Ok(file) => {
            tracing::warn!(path = %path.display(), version = file.version, "unknown tool cache version; starting empty");
            return Entries::new();
        }
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "malformed tool cache; starting empty");
            return Entries::new();
        }
    };
    file.entries
        .into_iter()
        .map(|(key, raw)| {
            let saved_at_ms = serde_json::from_str::<Stamp>(raw.get()).map_or(0, |s| s.saved_at_ms);
            (key, RawEntry { saved_at_ms, raw })
        })
        .collect()
}

fn write_file(path: &Path, entries: &Entries) -> std::io::Result<()> {
    let file = CacheFile {
        version: FILE_VERSION,
        entries: entries
            .iter()
            .map(|(key, entry)| (key.clone(), entry.raw.clone()))
            .collect(),
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let bytes = serde_json::to_vec(&file).map_err(std::io::Error::other)?;
    let mut temp = tempfile::NamedTempFile::new_in(&dir)?;
    // No fsync: this is a cache. The rename keeps a crashed process from
    // leaving a mix; a power loss may leave an empty file, which reads as
    // an empty cache.
    temp.write_all(&bytes)?;
    temp.persist(path).map_err(|error| error.error)?;
    Ok(())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn entry(id: &str, tools: &[&str], saved_at_ms: u64) -> CachedTools {
        CachedTools {
            saved_at_ms,
            ..CachedTools::new(id, tools.iter().map(|t| Tool::new(*t)).collect())
        }
    }

    #[tokio::test]
    async fn json_cache_round_trips_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/tools.json");
        let cache = JsonFileToolCache::open(&path);
        assert_eq!(cache.load("fp").await, None);
        cache.store("fp", entry("s", &["a", "b"], 1)).await;
        assert!(path.is_file());

        let reopened = JsonFileToolCache::open(&path);
        let loaded = reopened.load("fp").await.unwrap();
        assert_eq!(loaded.server_id, "s");
        let names: Vec<&str> = loaded.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);

        reopened.remove("fp").await;
        assert_eq!(JsonFileToolCache::open(&path).load("fp").await, None);
    }

    #[tokio::test]
    async fn the_era_is_kept_and_read_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.json");
        let cache = JsonFileToolCache::open(&path);
        assert_eq!(cache.era("fp").await, None);
        let mut modern = entry("m", &["a"], 1);
        modern.era = Some(Era::Modern);
        modern.protocol_version = Some("2026-07-28".to_owned());
        cache.store("fp", modern).await;
        cache.store("old", entry("o", &["b"], 2)).await;
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"era\":\"modern\""), "{text}");

        let reopened = JsonFileToolCache::open(&path);
        assert_eq!(reopened.era("fp").await, Some(Era::Modern));
        assert_eq!(reopened.era("old").await, None, "entries from before eras");
        assert_eq!(
            reopened
                .load("fp")
                .await
                .unwrap()
                .protocol_version
                .as_deref(),
            Some("2026-07-28")
        );
        let memory = MemoryToolCache::new();
        let mut legacy = entry("l", &["c"], 3);
        legacy.era = Some(Era::Legacy);
        memory.store("fp", legacy).await;
        assert_eq!(memory.era("fp").await, Some(Era::Legacy));
    }

    #[tokio::test]
    async fn malformed_file_is_an_empty_cache_and_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.json");
        std::fs::write(&path, "{not json").unwrap();
        let cache = JsonFileToolCache::open(&path);
        assert_eq!(cache.load("fp").await, None);
        cache.store("fp", entry("s", &["a"], 1)).await;
        let text = std::fs::read_to_string(&path).unwrap();
        let file: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(file["version"], 1);
        assert_eq!(file["entries"]["fp"]["tools"][0]["name"], "a");
    }

    #[tokio::test]
    async fn oldest_entries_go_first() {
        let dir = tempfile::tempdir().unwrap();
        let cache = JsonFileToolCache::open(dir.path().join("t.json")).with_max_entries(2);
        cache.store("one", entry("1", &[], 10)).await;
        cache.store("two", entry("2", &[], 30)).await;
        cache.store("three", entry("3", &[], 20)).await;
        assert_eq!(cache.load("one").await, None);
        assert!(cache.load("two").await.is_some());
        assert!(cache.load("three").await.is_some());
    }

    #[tokio::test]
    async fn caches_sharing_a_file_keep_each_others_entries() {
        // Two processes' views of one file (a host and `mcpctl`): each read
        // the file before the other wrote.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.json");
        let host = JsonFileToolCache::open(&path);
        let cli = JsonFileToolCache::open(&path);
        assert_eq!(host.load("a").await, None);
        assert_eq!(cli.load("b").await, None);
        host.store("a", entry("a", &["x"], 1)).await;
        cli.store("b", entry("b", &["y"], 2)).await;
        cli.store("c", entry("c", &["z"], 3)).await;
        host.remove("c").await;
        let fresh = JsonFileToolCache::open(&path);
        assert!(
            fresh.load("a").await.is_some(),
            "the host's entry was dropped"
        );
        assert!(
            fresh.load("b").await.is_some(),
            "the cli's entry was dropped"
        );
        assert_eq!(fresh.load("c").await, None);
        // A change refreshes the view: the host now sees the cli's entry.
        assert!(host.load("b").await.is_some());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_stores_from_many_caches_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.json");
        let mut tasks = Vec::new();
        for writer in 0..8 {
            let cache = JsonFileToolCache::open(&path);
            tasks.push(tokio::spawn(async move {
                for n in 0..10 {
                    let key = format!("w{writer}-{n}");
                    cache.store(&key, entry(&key, &["t"], n)).await;
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let file: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(file["entries"].as_object().unwrap().len(), 80);
    }

    #[tokio::test]
    async fn an_unchanged_entry_is_not_rewritten_until_its_stamp_is_a_day_old() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.json");
        let cache = JsonFileToolCache::open(&path);
        let saved = |path: &Path| -> u64 {
            let text = std::fs::read_to_string(path).unwrap();
            let file: serde_json::Value = serde_json::from_str(&text).unwrap();
            file["entries"]["fp"]["savedAtMs"].as_u64().unwrap()
        };
        cache.store("fp", entry("s", &["a"], 1_000)).await;
        cache.store("fp", entry("s", &["a"], 2_000)).await;
        assert_eq!(saved(&path), 1_000, "an unchanged entry was rewritten");
        cache.store("fp", entry("s", &["a", "b"], 3_000)).await;
        assert_eq!(saved(&path), 3_000, "a changed entry was not written");
        let day_later = 3_000 + JsonFileToolCache::REFRESH_AFTER_MS;
        cache.store("fp", entry("s", &["a", "b"], day_later)).await;
        assert_eq!(saved(&path), day_later, "a day-old stamp was kept");
    }

    #[tokio::test]
    async fn several_stores_land_together() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.json");
        let cache = JsonFileToolCache::open(&path);
        let batch = (0..5)
            .map(|n| (format!("fp{n}"), entry(&format!("s{n}"), &["t"], n)))
            .collect();
        cache.store_all(batch).await;
        let reopened = JsonFileToolCache::open(&path);
        for n in 0..5 {
            assert!(reopened.load(&format!("fp{n}")).await.is_some(), "fp{n}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn loads_do_not_wait_for_a_write_in_progress() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.json");
        let cache = Arc::new(JsonFileToolCache::open(&path));
        cache.store("fp", entry("s", &["a"], 1)).await;
        // Another process holds the file's lock: a store now waits for it.
        let held = lock_file(&path).unwrap();
        let writer = {
            let cache = Arc::clone(&cache);
            tokio::spawn(async move { cache.store("other", entry("o", &["b"], 2)).await })
        };
        let loaded = tokio::time::timeout(Duration::from_secs(30), cache.load("fp"))
            .await
            .expect("a load waited for the blocked write");
        assert!(loaded.is_some());
        assert!(!writer.is_finished());
        drop(held);
        writer.await.unwrap();
        assert!(cache.load("other").await.is_some());
    }

    #[tokio::test]
    async fn memory_cache_stores_and_forgets() {
        let cache = MemoryToolCache::new();
        cache.store("fp", entry("s", &["a"], 1)).await;
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.load("fp").await.unwrap().tools[0].name, "a");
        cache.remove("fp").await;
        assert!(cache.is_empty());
    }
}
