//! TLS handshake failures in words: which part of an HTTPS server's certificate or handshake failed, read from rustls's own error.

use std::error::Error as StdError;
use std::fmt;

use mcp_proto::text::{self, NAME_LIMIT};
use rustls::CertificateError;
use url::Url;

/// What failed in a TLS handshake with an HTTPS server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The certificate's issuer is not a trusted certificate authority (a
    /// self-signed certificate, a private CA not added to the roots).
    UnknownIssuer,
    /// The certificate has expired.
    Expired,
    /// The certificate is not valid yet.
    NotYetValid,
    /// The certificate does not name the host of the URL.
    WrongName,
    /// The certificate was refused for another reason (revoked, a bad
    /// signature, the wrong purpose, an unsupported algorithm, malformed).
    BadCertificate,
    /// The server answered the TLS handshake with something that is not
    /// TLS: a plain HTTP server on an `https://` URL.
    NotTls,
    /// The handshake itself failed: no protocol version or cipher in
    /// common, the server refused it with an alert, or broke its rules.
    Handshake,
}

/// A TLS handshake with an HTTPS server failed (RFC 8446; the server's
/// certificate is checked as RFC 5280 and RFC 6125 say).
///
/// It reaches callers as the source of a [`TransportError::Io`]
/// (`io::Error::get_ref` downcasts to it), so that a host tells a
/// certificate problem from a server that is not there by type, not by
/// text. Its `Display` names the server's origin and what failed (the
/// issuer, the expiry, the name, a plain HTTP server); names the server
/// presented are bounded and escaped.
///
/// [`TransportError::Io`]: crate::TransportError::Io
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsError {
    failure: TlsFailure,
    message: String,
}

impl TlsError {
    /// Which part of the handshake failed.
    pub fn failure(&self) -> TlsFailure {
        self.failure
    }

    /// Whether a certificate was refused (rather than the handshake itself).
    pub fn is_certificate(&self) -> bool {
        matches!(
            self.failure,
            TlsFailure::UnknownIssuer
                | TlsFailure::Expired
                | TlsFailure::NotYetValid
                | TlsFailure::WrongName
                | TlsFailure::BadCertificate
        )
    }

    /// The TLS failure `error` stands for, if its chain holds a rustls error
    /// (tokio-rustls puts it inside an `io::Error`, whose `source` skips it).
    /// `url` is the server's, named by origin only (its path and query may
    /// hold secrets).
    pub(crate) fn find(error: &(dyn StdError + 'static), url: &Url) -> Option<TlsError> {
        let mut current = Some(error);
        while let Some(cause) = current {
            if let Some(tls) = TlsError::within(cause, url) {
                return Some(tls);
            }
            current = cause.source();
        }
        None
    }

    /// `error` itself as a TLS failure, or the error an `io::Error` wraps
    /// (hyper-rustls wraps tokio-rustls's `io::Error` in another one, and
    /// an `io::Error`'s `source` skips what it wraps).
    fn within(error: &(dyn StdError + 'static), url: &Url) -> Option<TlsError> {
        if let Some(tls) = error.downcast_ref::<TlsError>() {
            return Some(tls.clone());
        }
        if let Some(rustls) = error.downcast_ref::<rustls::Error>() {
            return Some(TlsError::from_rustls(rustls, url));
        }
        let inner = error
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)?;
        TlsError::within(inner, url)
    }

    fn from_rustls(error: &rustls::Error, url: &Url) -> TlsError {
        let origin = url.origin().ascii_serialization();
        let (failure, message) = match error {
            rustls::Error::InvalidCertificate(certificate) => certificate_failure(certificate, url),
            rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => (
                TlsFailure::NotTls,
                format!(
                    "the server at {origin} does not speak TLS; is the URL http://{}?",
                    url.host_str()
                        .map(|host| match url.port() {
                            Some(port) => format!("{host}:{port}"),
                            None => host.to_owned(),
                        })
                        .unwrap_or_default()
                ),
            ),
            rustls::Error::PeerIncompatible(incompatible) => (
                TlsFailure::Handshake,
                format!(
                    "the server at {origin} has no TLS version or cipher in common with this \
                     client (TLS 1.2 and 1.3): {incompatible:?}"
                ),
            ),
            rustls::Error::AlertReceived(alert) => (
                TlsFailure::Handshake,
                format!("the server at {origin} refused the TLS handshake ({alert:?})"),
            ),
            other => (
                TlsFailure::Handshake,
                format!(
                    "the TLS handshake with {origin} failed: {}",
                    text::error_text(&other.to_string(), text::ERROR_TEXT_LIMIT)
                ),
            ),
        };
        TlsError { failure, message }
    }
}

/// A refused certificate's failure and message.
fn certificate_failure(error: &CertificateError, url: &Url) -> (TlsFailure, String) {
    let origin = url.origin().ascii_serialization();
    let refused = format!("the certificate of {origin} was refused");
    match error {
        CertificateError::UnknownIssuer => (
            TlsFailure::UnknownIssuer,
            format!(
                "{refused}: its issuer is not a trusted certificate authority (self-signed, or a \
                 private CA: trust it with SSL_CERT_FILE or the server's extra roots)"
            ),
        ),
        CertificateError::Expired => (TlsFailure::Expired, format!("{refused}: it has expired")),
        CertificateError::ExpiredContext { time, not_after } => (
            TlsFailure::Expired,
            format!(
                "{refused}: it expired {} ago",
                ago(time.as_secs().saturating_sub(not_after.as_secs()))
            ),
        ),
        CertificateError::NotValidYet => (
            TlsFailure::NotYetValid,
            format!("{refused}: it is not valid yet"),
        ),
        CertificateError::NotValidYetContext { time, not_before } => (
            TlsFailure::NotYetValid,
            format!(
                "{refused}: it is valid only in {}",
                ago(not_before.as_secs().saturating_sub(time.as_secs()))
            ),
        ),
        CertificateError::NotValidForName => (
            TlsFailure::WrongName,
            format!(
                "{refused}: it is not valid for {}",
                url.host_str().unwrap_or_default()
            ),
        ),
        CertificateError::NotValidForNameContext { presented, .. } => {
            let names: Vec<String> = presented
                .iter()
                .take(4)
                .map(|name| text::error_text(name, NAME_LIMIT).into_owned())
                .collect();
            let more = presented.len().saturating_sub(names.len());
            (
                TlsFailure::WrongName,
                format!(
                    "{refused}: it is not valid for {} (it names {}{})",
                    url.host_str().unwrap_or_default(),
                    if names.is_empty() {
                        "no host".to_owned()
                    } else {
                        names.join(", ")
                    },
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                ),
            )
        }
        other => (
            TlsFailure::BadCertificate,
            format!(
                "{refused}: {}",
                text::error_text(&other.to_string(), text::ERROR_TEXT_LIMIT)
            ),
        ),
    }
}

/// A span of seconds in the largest whole unit: `3 days`, `2 hours`.
fn ago(seconds: u64) -> String {
    let (count, unit) = match seconds {
        s if s >= 86_400 => (s / 86_400, "day"),
        s if s >= 3_600 => (s / 3_600, "hour"),
        s if s >= 60 => (s / 60, "minute"),
        s => (s, "second"),
    };
    format!("{count} {unit}{}", if count == 1 { "" } else { "s" })
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for TlsError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_http_answer_says_the_url_is_probably_http() {
        let url = Url::parse("https://127.0.0.1:8443/mcp?token=secret").unwrap();
        let error = rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, error);
        let tls = TlsError::find(&io, &url).unwrap();
        assert_eq!(tls.failure(), TlsFailure::NotTls);
        assert_eq!(
            tls.to_string(),
            "the server at https://127.0.0.1:8443 does not speak TLS; is the URL http://127.0.0.1:8443?"
        );
    }

    #[test]
    fn presented_names_are_bounded_and_escaped() {
        let url = Url::parse("https://127.0.0.1/").unwrap();
        let error = CertificateError::NotValidForNameContext {
            expected: rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap(),
            presented: vec![
                "evil\u{1b}[2J.example".to_owned(),
                "x".repeat(500),
                "a".into(),
                "b".into(),
                "c".into(),
            ],
        };
        let (failure, message) = certificate_failure(&error, &url);
        assert_eq!(failure, TlsFailure::WrongName);
        assert!(!message.contains('\u{1b}'), "{message}");
        assert!(message.len() < 400, "{message}");
        assert!(message.ends_with("and 1 more)"), "{message}");
        assert_eq!(ago(3 * 86_400 + 5), "3 days");
        assert_eq!(ago(1), "1 second");
    }
}
