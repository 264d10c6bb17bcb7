//! DPoP (RFC 9449): the client's P-256 key, the proof JWT of each request, and the nonces servers hand out.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use url::Url;

use crate::crypto::{random_token, s256};
use crate::store::unix_now;
use crate::{OAuthError, Secret};

/// The only proof algorithm this client signs with.
pub(crate) const ALGORITHM: &str = "ES256";

/// The `error` of a challenge asking for a (new) nonce (RFC 9449 §8, §9).
pub(crate) const USE_DPOP_NONCE: &str = "use_dpop_nonce";

/// The response header carrying a server's nonce.
pub(crate) const NONCE_HEADER: &str = "dpop-nonce";

/// The longest nonce taken from a server (RFC 9449 §8.1 allows any
/// `1*NQCHAR`; a longer one is a misbehaving server's).
const NONCE_LIMIT: usize = 512;

/// An ES256 key pair that binds tokens to this client (RFC 9449 §2): one
/// per MCP server and authorization server, kept with their tokens.
pub(crate) struct DpopKey {
    /// PKCS#8 DER, base64url: what the token store keeps.
    pkcs8: Secret,
    pair: EcdsaKeyPair,
    /// The public key as a JWK (RFC 7518 §6.2), for the proof header.
    jwk: serde_json::Value,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey")
            .field("thumbprint", &self.thumbprint())
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new random key.
    pub(crate) fn generate() -> Result<Self, OAuthError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| OAuthError::Key("could not make a DPoP key".to_owned()))?;
        DpopKey::from_der(pkcs8.as_ref())
    }

    /// The key a store kept ([`DpopKey::stored`]).
    pub(crate) fn from_stored(stored: &Secret) -> Result<Self, OAuthError> {
        let der = URL_SAFE_NO_PAD
            .decode(stored.expose())
            .map_err(|_| OAuthError::Key("the stored DPoP key is not base64url".to_owned()))?;
        DpopKey::from_der(&der)
    }

    fn from_der(der: &[u8]) -> Result<Self, OAuthError> {
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &SystemRandom::new())
                .map_err(|_| OAuthError::Key("the DPoP key is not a P-256 key".to_owned()))?;
        // An uncompressed SEC1 point: 0x04, then x and y of 32 bytes each.
        let point = pair.public_key().as_ref();
        let (x, y) = point[1..].split_at(32);
        let jwk = serde_json::json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        });
        Ok(DpopKey {
            pkcs8: Secret::new(URL_SAFE_NO_PAD.encode(der)),
            pair,
            jwk,
        })
    }

    /// What a token store keeps of the key (private: a [`Secret`]).
    pub(crate) fn stored(&self) -> &Secret {
        &self.pkcs8
    }

    /// The JWK SHA-256 thumbprint (RFC 7638), which a DPoP-bound token's
    /// `cnf.jkt` names.
    pub(crate) fn thumbprint(&self) -> String {
        // The required members in lexicographic order, no whitespace.
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            self.jwk["x"].as_str().unwrap_or_default(),
            self.jwk["y"].as_str().unwrap_or_default()
        );
        URL_SAFE_NO_PAD.encode(ring::digest::digest(
            &ring::digest::SHA256,
            canonical.as_bytes(),
        ))
    }

    /// A fresh proof (RFC 9449 §4.2) for one `method` request to `url`:
    /// `htu` is the URL without query and fragment, `jti` new each time;
    /// `ath` (the access token's base64url SHA-256) when the request
    /// presents `access_token`; `nonce` when the server gave one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &Url,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<Secret, OAuthError> {
        let mut htu = url.clone();
        htu.set_query(None);
        htu.set_fragment(None);
        let header = serde_json::json!({ "typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self.jwk });
        let mut claims = serde_json::json!({
            "jti": random_token(16)?,
            "htm": method,
            "htu": htu.as_str(),
            "iat": unix_now(),
        });
        if let Some(token) = access_token {
            claims["ath"] = s256(token).into();
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = nonce.into();
        }
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .map_err(|_| OAuthError::Key("signing the DPoP proof failed".to_owned()))?;
        Ok(Secret::new(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        )))
    }
}

/// A server's `DPoP-Nonce` value when it is one a proof can carry (RFC
/// 9449 §8.1: `1*NQCHAR`, here at most 512 characters).
pub(crate) fn valid_nonce(value: &str) -> Option<String> {
    let ok = !value.is_empty()
        && value.len() <= NONCE_LIMIT
        && value
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
    ok.then(|| value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    fn part(jwt: &str, index: usize) -> serde_json::Value {
        let text = jwt.split('.').nth(index).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(text).unwrap()).unwrap()
    }

    #[test]
    fn a_proof_verifies_with_its_own_jwk_and_names_the_request() {
        let key = DpopKey::generate().unwrap();
        let url = Url::parse("https://mcp.example/mcp?session=1#frag").unwrap();
        let proof = key
            .proof("POST", &url, Some("the-token"), Some("n-1"))
            .unwrap();
        let jwt = proof.expose();
        let header = part(jwt, 0);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        let claims = part(jwt, 1);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["ath"], s256("the-token"));
        assert_eq!(claims["nonce"], "n-1");
        assert!(claims["iat"].as_u64().unwrap() > 1_700_000_000);
        // The signature checks against the x and y of the header's JWK.
        let mut point = vec![4u8];
        for coordinate in ["x", "y"] {
            let text = header["jwk"][coordinate].as_str().unwrap();
            point.extend(URL_SAFE_NO_PAD.decode(text).unwrap());
        }
        let (input, signature) = jwt.rsplit_once('.').unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
            .verify(
                input.as_bytes(),
                &URL_SAFE_NO_PAD.decode(signature).unwrap(),
            )
            .unwrap();
        // Fresh each time; no ath or nonce unless given.
        let other = key.proof("POST", &url, None, None).unwrap();
        let claims2 = part(other.expose(), 1);
        assert_ne!(claims["jti"], claims2["jti"]);
        assert!(claims2.get("ath").is_none() && claims2.get("nonce").is_none());
    }

    #[test]
    fn a_stored_key_is_the_same_key() {
        let key = DpopKey::generate().unwrap();
        let again = DpopKey::from_stored(key.stored()).unwrap();
        assert_eq!(key.thumbprint(), again.thumbprint());
        assert_eq!(key.thumbprint().len(), 43);
        assert!(!format!("{key:?}").contains(key.stored().expose()));
        assert!(DpopKey::from_stored(&Secret::new("not a key")).is_err());
    }

    #[test]
    fn nonces_are_nqchar_and_bounded() {
        assert_eq!(valid_nonce("abc-123_~!").as_deref(), Some("abc-123_~!"));
        for bad in ["", "a b", "quote\"", "back\\slash", "é"] {
            assert_eq!(valid_nonce(bad), None, "{bad:?}");
        }
        assert_eq!(valid_nonce(&"n".repeat(513)), None);
    }
}
