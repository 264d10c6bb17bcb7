//! The OpenSSL-style CA variables `SSL_CERT_FILE` and `SSL_CERT_DIR`, read into extra trusted roots when a host opts in.

use std::fmt;
use std::path::{Path, PathBuf};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::transport::TransportError;

/// Which CA bundle variables add trusted roots, for hosts whose users
/// keep a private CA where OpenSSL looks for it. Off by default
/// ([`CaEnv::none`]): the HTTP transports trust the built-in webpki roots
/// and [`HttpOptions::extra_root_certificates`](crate::HttpOptions::extra_root_certificates)
/// only.
///
/// [`CaEnv::from_env`] reads:
///
/// - `SSL_CERT_FILE`: one PEM file of one or more certificates.
/// - `SSL_CERT_DIR`: directories (separated like `PATH`: `:` on Unix, `;`
///   on Windows) whose files are read as PEM; files that hold no
///   certificate (an index, a README) are skipped, and so are entries that
///   are not files (subdirectories, dangling links).
///
/// The variables' values (paths) are taken when the `CaEnv` is made, and the
/// files read by [`load`](Self::load) (which the transport calls when it
/// connects). A missing or unreadable file or directory, a file that is
/// not PEM, and an `SSL_CERT_FILE` or a set of directories that holds no
/// certificate are errors naming the variable and the path. The
/// certificates are added to the webpki roots, not instead of them.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct CaEnv {
    file: Option<String>,
    dirs: Option<String>,
}

impl CaEnv {
    /// Reads nothing: no roots but the built-in and configured ones.
    pub fn none() -> Self {
        CaEnv::default()
    }

    /// `SSL_CERT_FILE` and `SSL_CERT_DIR` from the process environment
    /// (an unset or empty variable adds nothing).
    pub fn from_env() -> Self {
        CaEnv::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), asking `lookup` for each
    /// variable's value instead of the process environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |name| lookup(name).filter(|value| !value.trim().is_empty());
        CaEnv {
            file: get("SSL_CERT_FILE"),
            dirs: get("SSL_CERT_DIR"),
        }
    }

    /// Whether a variable was set (so that [`load`](Self::load) reads files).
    pub fn is_set(&self) -> bool {
        self.file.is_some() || self.dirs.is_some()
    }

    /// Reads the certificates, as PEM texts (one per file that holds any),
    /// ready for
    /// [`extra_root_certificates`](crate::HttpOptions::extra_root_certificates)
    /// or [`tls_root_store`](crate::tls_root_store).
    pub fn load(&self) -> Result<Vec<String>, TransportError> {
        let mut out = Vec::new();
        if let Some(file) = &self.file {
            let path = Path::new(file);
            match read_pem(path, "SSL_CERT_FILE")? {
                Some(pem) => out.push(pem),
                None => {
                    return Err(problem(
                        "SSL_CERT_FILE",
                        path,
                        "holds no PEM certificate".to_owned(),
                    ));
                }
            }
        }
        if let Some(dirs) = &self.dirs {
            let before = out.len();
            for dir in std::env::split_paths(dirs).filter(|d| !d.as_os_str().is_empty()) {
                let entries = std::fs::read_dir(&dir)
                    .map_err(|e| problem("SSL_CERT_DIR", &dir, format!("cannot be read: {e}")))?;
                let mut files: Vec<PathBuf> = Vec::new();
                for entry in entries {
                    let entry = entry.map_err(|e| {
                        problem("SSL_CERT_DIR", &dir, format!("cannot be read: {e}"))
                    })?;
                    // `metadata` follows links (the hashed names are links);
                    // a dangling one is skipped.
                    if std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file()) {
                        files.push(entry.path());
                    }
                }
                files.sort();
                for file in files {
                    if let Some(pem) = read_pem(&file, "SSL_CERT_DIR")? {
                        out.push(pem);
                    }
                }
            }
            if out.len() == before {
                return Err(TransportError::Setup(format!(
                    "SSL_CERT_DIR ({}) holds no PEM certificate",
                    shown(Path::new(dirs))
                )));
            }
        }
        Ok(out)
    }
}

impl fmt::Debug for CaEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaEnv")
            .field("ssl_cert_file", &self.file)
            .field("ssl_cert_dir", &self.dirs)
            .finish()
    }
}

/// The file's text when it holds at least one certificate, `None` when it
/// holds none; an error when it cannot be read or a certificate in it is
/// malformed.
fn read_pem(path: &Path, var: &str) -> Result<Option<String>, TransportError> {
    let bytes =
        std::fs::read(path).map_err(|e| problem(var, path, format!("cannot be read: {e}")))?;
    let mut found = 0;
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        cert.map_err(|e| problem(var, path, format!("holds a malformed certificate: {e}")))?;
        found += 1;
    }
    if found == 0 {
        return Ok(None);
    }
    // PEM is ASCII; a file that parsed holds no other bytes between its
    // certificates that matter.
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

fn problem(var: &str, path: &Path, what: String) -> TransportError {
    TransportError::Setup(format!("{var}: {} {what}", shown(path)))
}

/// A path for a message: escaped onto one line, bounded.
fn shown(path: &Path) -> String {
    use mcp_proto::text::{Lines, bound, escape};
    bound(&escape(&path.to_string_lossy(), Lines::One), 512).into_owned()
}
