//! Randomness, PKCE S256 (RFC 7636) and ES256 client assertions for `private_key_jwt` (RFC 7523), on ring.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};

use crate::{OAuthError, Secret};

/// `bytes` random bytes, base64url without padding.
pub(crate) fn random_token(bytes: usize) -> Result<String, OAuthError> {
    let mut buffer = vec![0u8; bytes];
    SystemRandom::new()
        .fill(&mut buffer)
        .map_err(|_| OAuthError::Config("the system random source failed".to_owned()))?;
    Ok(URL_SAFE_NO_PAD.encode(buffer))
}

/// A PKCE verifier (32 random bytes: 43 characters) and its S256 challenge.
pub(crate) fn pkce_pair() -> Result<(Secret, String), OAuthError> {
    let verifier = random_token(32)?;
    let challenge = s256(&verifier);
    Ok((Secret::new(verifier), challenge))
}

/// `BASE64URL(SHA256(verifier))` (RFC 7636 §4.2).
pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.as_bytes(),
    ))
}

/// Hex SHA-256, for file names.
pub(crate) fn sha256_hex(data: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, data)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A signed ES256 JWT client assertion (RFC 7523 §3): `iss` and `sub` the
/// client id, `aud` the authorization server's issuer, valid five minutes.
pub(crate) fn client_assertion(
    private_key_pem: &Secret,
    client_id: &str,
    audience: &str,
) -> Result<Secret, OAuthError> {
    let der = pem_to_der(private_key_pem.expose())?;
    let rng = SystemRandom::new();
    let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
        .map_err(|_| OAuthError::Key("not a PKCS#8 P-256 private key".to_owned()))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let header = serde_json::json!({ "alg": "ES256", "typ": "JWT" });
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": random_token(16)?,
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = key
        .sign(&rng, signing_input.as_bytes())
        .map_err(|_| OAuthError::Key("signing failed".to_owned()))?;
    Ok(Secret::new(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature.as_ref())
    )))
}

/// The DER inside a `-----BEGIN PRIVATE KEY-----` PEM block.
fn pem_to_der(pem: &str) -> Result<Vec<u8>, OAuthError> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with("-----BEGIN PRIVATE KEY-----"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    if body.is_empty() {
        return Err(OAuthError::Key(
            "expected a PEM `PRIVATE KEY` (PKCS#8) block".to_owned(),
        ));
    }
    STANDARD
        .decode(body)
        .map_err(|_| OAuthError::Key("the PEM block is not valid base64".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, KeyPair, UnparsedPublicKey};

    #[test]
    fn s256_is_base64url_of_sha256() {
        // Computed independently (Python hashlib + urlsafe_b64encode).
        assert_eq!(
            s256("dBjftJeZ4CVP-mJ0kMwCvvbJ7Ftz3CIzzUx4v4MPXKU"),
            "_uuNnFhG2OfqbBF_oGahP08Nt2RvfyHoMQiQe7Yurug"
        );
        let (verifier, challenge) = pkce_pair().unwrap();
        assert_eq!(verifier.expose().len(), 43);
        assert_eq!(s256(verifier.expose()), challenge);
    }

    #[test]
    fn client_assertion_verifies_with_the_public_key() {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(pkcs8.as_ref())
        );
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let jwt = client_assertion(&Secret::new(pem), "client-1", "https://as.example").unwrap();
        let parts: Vec<&str> = jwt.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example");
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.public_key().as_ref())
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .unwrap();
        assert!(client_assertion(&Secret::new("nope"), "c", "a").is_err());
    }
}
