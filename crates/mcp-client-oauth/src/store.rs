//! Token storage behind a trait (hosts may use a keychain): an in-memory store and a file store (one 0600 file per server and issuer, written atomically).

use std::collections::HashMap;
use std::io::{self, Write as _};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{OAuthError, Secret};

/// Credentials are stored per MCP server and authorization server: a
/// token from one issuer is never sent to a server that now names another
/// (MCP "Token Audience Binding"), and a registration is per issuer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StoreKey {
    /// The MCP server's canonical URL.
    pub server: String,
    /// The authorization server's issuer.
    pub issuer: String,
}

/// A client identity at one authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ClientRegistration {
    /// The client id (a URL for client ID metadata documents).
    pub client_id: String,
    /// The secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// `client_secret_basic`, `client_secret_post`, `private_key_jwt` or
    /// `none`.
    pub token_endpoint_auth_method: String,
}

impl ClientRegistration {
    /// A registration from its parts.
    pub fn new(
        client_id: impl Into<String>,
        client_secret: Option<Secret>,
        token_endpoint_auth_method: impl Into<String>,
    ) -> Self {
        ClientRegistration {
            client_id: client_id.into(),
            client_secret,
            token_endpoint_auth_method: token_endpoint_auth_method.into(),
        }
    }
}

/// Tokens from one token response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Tokens {
    /// The bearer token.
    pub access_token: Secret,
    /// The refresh token, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// Expiry in seconds since the Unix epoch, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The granted scopes, when the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The token is DPoP-bound (`token_type` `DPoP`, RFC 9449 §5): it is
    /// sent with the `DPoP` scheme and a proof signed with the key stored
    /// beside it ([`StoredCredentials::dpop_key`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dpop: bool,
}

impl Tokens {
    /// A token with nothing else known.
    pub fn new(access_token: Secret) -> Self {
        Tokens {
            access_token,
            refresh_token: None,
            expires_at: None,
            scope: None,
            dpop: false,
        }
    }

    /// Expires within `margin_secs` from now.
    pub fn expires_within(&self, margin_secs: u64) -> bool {
        self.expires_at
            .is_some_and(|at| at <= unix_now().saturating_add(margin_secs))
    }
}

/// What a store keeps for one [`StoreKey`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredCredentials {
    /// A registration made at this issuer (dynamic registration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientRegistration>,
    /// The last tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Tokens>,
    /// The client's private DPoP key for this server and issuer (PKCS#8
    /// DER, base64url), when its tokens are DPoP-bound (RFC 9449).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<Secret>,
}

/// Where credentials live between runs. Implementations must never log
/// what they store.
#[async_trait]
pub trait TokenStore: Send + Sync + std::fmt::Debug + 'static {
    /// The credentials for `key`, if any.
    async fn load(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, OAuthError>;
    /// Replaces the credentials for `key`.
    async fn save(&self, key: &StoreKey, value: &StoredCredentials) -> Result<(), OAuthError>;
    /// Forgets `key` (logout). Removing nothing is not an error.
    async fn remove(&self, key: &StoreKey) -> Result<(), OAuthError>;
}

/// Keeps credentials for the life of the process.
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    entries: Mutex<HashMap<StoreKey, StoredCredentials>>,
}

#[async_trait]
impl TokenStore for MemoryTokenStore {
    async fn load(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, OAuthError> {
        Ok(self.lock().get(key).cloned())
    }

    async fn save(&self, key: &StoreKey, value: &StoredCredentials) -> Result<(), OAuthError> {
        self.lock().insert(key.clone(), value.clone());
        Ok(())
    }

    async fn remove(&self, key: &StoreKey) -> Result<(), OAuthError> {
        self.lock().remove(key);
        Ok(())
    }
}

impl MemoryTokenStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<StoreKey, StoredCredentials>> {
        mcp_proto::sync::lock(&self.entries)
    }
}

/// One JSON file per key in a directory, named by the SHA-256 of the key,
/// readable by the owner only (0600 on Unix), replaced atomically (a temp
/// file in the same directory, then a rename).
#[derive(Debug, Clone)]
pub struct FileTokenStore {
    dir: PathBuf,
}

#[derive(Serialize, Deserialize)]
struct FileEntry {
    server: String,
    issuer: String,
    #[serde(flatten)]
    credentials: StoredCredentials,
}

impl FileTokenStore {
    /// A store in `dir`, created (0700 on Unix) on first save.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FileTokenStore { dir: dir.into() }
    }

    /// The file that holds `key`.
    pub fn path(&self, key: &StoreKey) -> PathBuf {
        let name = crate::crypto::sha256_hex(format!("{}\n{}", key.server, key.issuer).as_bytes());
        self.dir.join(format!("{name}.json"))
    }

    /// Forgets every issuer's credentials for the MCP server at
    /// `server_url` (`mcpctl logout`: no discovery needed); returns how many
    /// entries were removed. Files of other servers, and files that do not
    /// parse, are left alone.
    pub async fn remove_server(&self, server_url: &url::Url) -> Result<usize, OAuthError> {
        let server = crate::discovery::canonical_resource(server_url);
        let dir = self.dir.clone();
        blocking(move || {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
                Err(e) => return Err(e),
            };
            let mut removed = 0;
            for entry in entries {
                let path = entry?.path();
                if path.extension().is_none_or(|ext| ext != "json") {
                    continue;
                }
                let Ok(text) = std::fs::read(&path) else {
                    continue;
                };
                let Ok(entry) = serde_json::from_slice::<FileEntry>(&text) else {
                    continue;
                };
                if entry.server == server {
                    match std::fs::remove_file(&path) {
                        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                        _ => removed += 1,
                    }
                }
            }
            Ok(removed)
        })
        .await
    }
}

#[async_trait]
impl TokenStore for FileTokenStore {
    async fn load(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, OAuthError> {
        let path = self.path(key);
        let key = key.clone();
        blocking(move || {
            let text = match std::fs::read(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            let entry: FileEntry = serde_json::from_slice(&text)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            // A hash collision or a hand-edited file: not this key's.
            if entry.server != key.server || entry.issuer != key.issuer {
                return Ok(None);
            }
            Ok(Some(entry.credentials))
        })
        .await
    }

    async fn save(&self, key: &StoreKey, value: &StoredCredentials) -> Result<(), OAuthError> {
        let path = self.path(key);
        let dir = self.dir.clone();
        let entry = FileEntry {
            server: key.server.clone(),
            issuer: key.issuer.clone(),
            credentials: value.clone(),
        };
        let text = serde_json::to_vec_pretty(&entry)
            .map_err(|e| OAuthError::Store(io::Error::other(e.to_string())))?;
        blocking(move || {
            create_private_dir(&dir)?;
            // tempfile creates the file 0600 on Unix.
            let mut file = tempfile::NamedTempFile::new_in(&dir)?;
            file.write_all(&text)?;
            file.as_file().sync_all()?;
            file.persist(&path).map_err(|e| e.error)?;
            Ok(())
        })
        .await
    }

    async fn remove(&self, key: &StoreKey) -> Result<(), OAuthError> {
        let path = self.path(key);
        blocking(move || match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        })
        .await
    }
}

fn create_private_dir(dir: &std::path::Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> Result<T, OAuthError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| OAuthError::Store(io::Error::other(e.to_string())))?
        .map_err(OAuthError::Store)
}

pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn file_store_round_trips_privately_and_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileTokenStore::new(dir.path().join("tokens"));
        let key = StoreKey {
            server: "https://mcp.example/mcp".to_owned(),
            issuer: "https://as.example".to_owned(),
        };
        assert_eq!(store.load(&key).await.unwrap(), None);
        let mut tokens = Tokens::new(Secret::new("RECOGNISABLE-TOKEN-1"));
        tokens.refresh_token = Some(Secret::new("RECOGNISABLE-REFRESH-1"));
        let value = StoredCredentials {
            client: Some(ClientRegistration::new("c", None, "none")),
            tokens: Some(tokens),
            dpop_key: Some(Secret::new("RECOGNISABLE-KEY-1")),
        };
        store.save(&key, &value).await.unwrap();
        store.save(&key, &value).await.unwrap();
        assert_eq!(store.load(&key).await.unwrap(), Some(value.clone()));
        // Another issuer for the same server is another entry.
        let other = StoreKey {
            issuer: "https://other.example".to_owned(),
            ..key.clone()
        };
        assert_eq!(store.load(&other).await.unwrap(), None);
        let files: Vec<_> = std::fs::read_dir(dir.path().join("tokens"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files, [store.path(&key)], "no temp file is left behind");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path(&key))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Debug output of what is stored never shows a token.
        let shown = format!("{value:?}");
        assert!(!shown.contains("RECOGNISABLE"), "{shown}");
        store.remove(&key).await.unwrap();
        store.remove(&key).await.unwrap();
        assert_eq!(store.load(&key).await.unwrap(), None);
    }

    #[tokio::test]
    async fn remove_server_forgets_every_issuer_of_one_server_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileTokenStore::new(dir.path());
        let value = StoredCredentials {
            client: None,
            tokens: Some(Tokens::new(Secret::new("t"))),
            dpop_key: None,
        };
        let url = url::Url::parse("https://mcp.example/mcp").unwrap();
        let server = crate::discovery::canonical_resource(&url);
        for (server, issuer) in [
            (server.as_str(), "https://a.example"),
            (server.as_str(), "https://b.example"),
            ("https://other.example/mcp", "https://a.example"),
        ] {
            let key = StoreKey {
                server: server.to_owned(),
                issuer: issuer.to_owned(),
            };
            store.save(&key, &value).await.unwrap();
        }
        assert_eq!(store.remove_server(&url).await.unwrap(), 2);
        assert_eq!(store.remove_server(&url).await.unwrap(), 0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
