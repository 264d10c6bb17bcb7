//! Elicitation: the server's `elicitation/create` request in form and URL modes, and the client's answer (MCP "Client/Elicitation").

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

use super::Meta;
use super::de::deserialize_object;
use super::{JsonObject, TaskMetadata};

/// `elicitation/create` request parameters (2025-06-18): form mode, or URL
/// mode (2025-11-25), chosen by `mode`. A missing `mode` means form; an
/// unknown `mode` is a decoding error, which the client answers with
/// `-32602`.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitRequestParams {
    /// Ask the user to fill in a form.
    Form(ElicitFormParams),
    /// Send the user to a URL (2025-11-25).
    Url(ElicitUrlParams),
}

impl ElicitRequestParams {
    /// The message to show the user.
    pub fn message(&self) -> &str {
        match self {
            ElicitRequestParams::Form(f) => &f.message,
            ElicitRequestParams::Url(u) => &u.message,
        }
    }
}

impl Serialize for ElicitRequestParams {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ElicitRequestParams::Form(f) => f.serialize(serializer),
            ElicitRequestParams::Url(u) => u.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Elicitations are rare and small, so the object is read once into a
        // tree and decoded from it once `mode` is known.
        let object = JsonObject::deserialize(deserializer)?;
        let url = match object.get("mode") {
            None => false,
            Some(serde_json::Value::String(mode)) if mode == "form" => false,
            Some(serde_json::Value::String(mode)) if mode == "url" => true,
            Some(other) => {
                return Err(de::Error::custom(format_args!(
                    "unsupported elicitation mode {other}"
                )));
            }
        };
        let value = serde_json::Value::Object(object);
        if url {
            ElicitUrlParams::deserialize(value)
                .map(ElicitRequestParams::Url)
                .map_err(de::Error::custom)
        } else {
            ElicitFormParams::deserialize(value)
                .map(ElicitRequestParams::Form)
                .map_err(de::Error::custom)
        }
    }
}

/// Form-mode elicitation parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitFormParams {
    /// `Some("form")` when the server wrote the mode (2025-11-25), `None`
    /// when it left it out (2025-06-18 style); either way this is form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What is asked and why.
    pub message: String,
    /// The form: a flat object schema of primitive properties.
    pub requested_schema: ElicitationSchema,
    /// Ask for task-augmented execution (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// URL-mode elicitation parameters (2025-11-25). The client must not
/// prefetch the URL, must show it in full and ask for consent, and must
/// open it where neither the client nor the model can see the page.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "mode", rename = "url", rename_all = "camelCase")]
pub struct ElicitUrlParams {
    /// Why the user should go there.
    pub message: String,
    /// Identifies the elicitation (opaque); `notifications/elicitation/complete` names it.
    pub elicitation_id: String,
    /// Where to send the user.
    pub url: String,
    /// Ask for task-augmented execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_object!(ElicitUrlParams, "URL-mode elicitation parameters", tag "mode" = "url", {
    message: "message" => req,
    elicitation_id: "elicitationId" => req,
    url: "url" => req,
    task: "task" => opt,
    meta: "_meta" => opt,
});

/// The schema of an elicitation form: `type: "object"` with primitive
/// properties (string, number, integer, boolean, enums) and no nesting.
/// Property schemas are kept as JSON, since their variants overlap.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationSchema {
    /// The JSON Schema dialect, if given.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub schema_type: String,
    /// Property name to primitive schema.
    pub properties: JsonObject,
    /// The properties the user must fill in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitationSchema {
    /// The `default` of property `name` (SEP-1034, 2025-11-25), if it has one.
    pub fn default_for(&self, name: &str) -> Option<&serde_json::Value> {
        self.properties.get(name)?.get("default")
    }
}

/// Fills in the schema's defaults for the properties the user left out of
/// an accepted form (SEP-1034, 2025-11-25): every property with a `default`
/// that is missing from `content`, or `null` in it, gets the default.
/// Values the user gave are kept as they are.
pub fn fill_elicitation_defaults(
    schema: &ElicitationSchema,
    mut content: JsonObject,
) -> JsonObject {
    for (name, property) in &schema.properties {
        let Some(default) = property.get("default") else {
            continue;
        };
        match content.get_mut(name) {
            Some(value) if !value.is_null() => {}
            Some(value) => *value = default.clone(),
            None => {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    content
}

/// The client's answer to `elicitation/create`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The form's values, only with `accept` in form mode: strings,
    /// numbers, booleans and (2025-11-25) arrays of strings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<JsonObject>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitResult {
    /// An answer with an action and no content.
    pub fn new(action: ElicitAction) -> Self {
        ElicitResult {
            action,
            content: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// What the user did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted the form, or (URL mode) agreed to open the URL.
    Accept,
    /// Explicitly said no.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// `notifications/elicitation/complete` parameters (2025-11-25): a URL-mode
/// elicitation finished. Unknown ids are ignored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteNotificationParams {
    /// The elicitation that finished.
    pub elicitation_id: String,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `data` of a `-32042` URL-elicitation-required error (2025-11-25):
/// run these elicitations, then retry the request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UrlElicitationRequiredData {
    /// The URL elicitations to run.
    pub elicitations: Vec<ElicitUrlParams>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: serde_json::Value) -> ElicitationSchema {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn defaults_fill_only_missing_or_null_fields() {
        // The schema of the conformance scenario elicitation-sep1034-client-defaults.
        let s = schema(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "nickname": {"type": "string"}
            },
            "required": []
        }));
        assert_eq!(s.default_for("age"), Some(&json!(30)));
        assert_eq!(s.default_for("nickname"), None);
        assert_eq!(s.default_for("absent"), None);

        let filled = fill_elicitation_defaults(&s, JsonObject::new());
        assert_eq!(
            serde_json::Value::Object(filled),
            json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
        );

        let given = json!({"name": "Ada", "verified": false, "age": null, "extra": 1});
        let serde_json::Value::Object(given) = given else {
            unreachable!()
        };
        let filled = fill_elicitation_defaults(&s, given);
        assert_eq!(
            serde_json::Value::Object(filled),
            json!({"name": "Ada", "verified": false, "age": 30, "extra": 1,
                   "score": 95.5, "status": "active"})
        );
    }

    #[test]
    fn mode_selects_the_variant() {
        let form = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}});
        assert!(matches!(
            serde_json::from_value::<ElicitRequestParams>(form.clone()).unwrap(),
            ElicitRequestParams::Form(ElicitFormParams { mode: None, .. })
        ));
        let mut explicit = form.clone();
        explicit["mode"] = json!("form");
        let decoded: ElicitRequestParams = serde_json::from_value(explicit.clone()).unwrap();
        assert_eq!(serde_json::to_value(&decoded).unwrap(), explicit);

        let url = json!({"mode": "url", "message": "m", "elicitationId": "e1", "url": "https://x.example/"});
        let decoded: ElicitRequestParams = serde_json::from_value(url.clone()).unwrap();
        assert!(matches!(decoded, ElicitRequestParams::Url(_)));
        assert_eq!(serde_json::to_value(&decoded).unwrap(), url);

        for bad in [
            json!({"mode": "telepathy", "message": "m"}),
            json!({"mode": 1, "message": "m"}),
        ] {
            assert!(serde_json::from_value::<ElicitRequestParams>(bad).is_err());
        }
    }
}
