//! What the readers of the hosts' files share: the hosts' reference syntaxes turned into ours, and the once-per-file report of fields with no meaning here.

use crate::diagnostic::{Code, Diagnostic};
use crate::json::FieldReader;

use super::ReadContext;

/// How a host writes references inside strings, and what it substitutes
/// itself. Our own syntax is `${NAME}` for an environment variable (see
/// [`crate::expand`]); a host's other forms are rewritten to it, the host's
/// own variables are substituted from the [`ReadContext`], and `${input:ID}`
/// stays verbatim (a prompt, answered when the server connects).
#[derive(Clone, Debug, Default)]
pub(super) struct TextRules {
    /// `${env:NAME}` means `${NAME}` (VS Code, Cursor, Windsurf).
    pub(super) env_prefix: bool,
    /// `{env:NAME}` means `${NAME}` (opencode).
    pub(super) brace_env: bool,
    /// `$NAME` means `${NAME}` (Gemini CLI).
    pub(super) bare_dollar: bool,
    /// `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}`,
    /// `${pathSeparator}` and `${/}` are the host's own (VS Code, Cursor).
    pub(super) host_variables: bool,
    /// `${input:ID}` references are collected (VS Code).
    pub(super) inputs: bool,
    /// A reference form to file contents the host reads itself, which is
    /// refused: `${file:` (Windsurf) or `{file:` (opencode).
    pub(super) file_reference: Option<&'static str>,
    /// The project directory, as a string, when known.
    pub(super) project: Option<String>,
    /// The home directory, as a string, when known.
    pub(super) home: Option<String>,
}

/// Why a string could not be taken over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TextProblem {
    pub(super) code: Code,
    pub(super) message: String,
}

impl TextRules {
    /// Rules with the context's directories filled in.
    pub(super) fn new(context: &ReadContext) -> Self {
        TextRules {
            project: context
                .project_dir
                .as_ref()
                .map(|dir| dir.to_string_lossy().into_owned()),
            home: context
                .home_dir
                .as_ref()
                .map(|dir| dir.to_string_lossy().into_owned()),
            ..TextRules::default()
        }
    }

    /// `text` in our syntax, and the `${input:ID}` ids it references.
    pub(super) fn apply(&self, text: &str) -> Result<(String, Vec<String>), TextProblem> {
        if let Some(form) = self.file_reference
            && text.contains(form)
        {
            return Err(TextProblem {
                code: Code::UnsupportedReference,
                message: format!(
                    "`{form}...}}` (a file's contents) is not supported; put the value in an \
                     environment variable and reference that instead"
                ),
            });
        }
        let mut out = String::with_capacity(text.len());
        let mut inputs = Vec::new();
        let mut rest = text;
        while let Some(at) = rest.find(['$', '{']) {
            out.push_str(&rest[..at]);
            rest = &rest[at..];
            // `$${` is our escape for a literal `${`: kept as it is.
            if rest.starts_with("$${") {
                out.push_str("$${");
                rest = &rest[3..];
                continue;
            }
            if let Some(inner) = rest.strip_prefix("${")
                && let Some(end) = inner.find('}')
            {
                let name = &inner[..end];
                let after = &inner[end + 1..];
                if let Some(var) = name.strip_prefix("env:").filter(|_| self.env_prefix) {
                    out.push_str("${");
                    out.push_str(var);
                    out.push('}');
                } else if let Some(id) = name.strip_prefix("input:").filter(|_| self.inputs) {
                    if !inputs.iter().any(|seen| seen == id) {
                        inputs.push(id.to_owned());
                    }
                    out.push_str(&rest[..end + 3]);
                } else if self.host_variables
                    && let Some(value) = self.host_variable(name)?
                {
                    // A directory holding `${` must not read as a reference.
                    out.push_str(&value.replace("${", "$${"));
                } else {
                    out.push_str(&rest[..end + 3]);
                }
                rest = after;
                continue;
            }
            if let Some(inner) = rest.strip_prefix("{env:").filter(|_| self.brace_env)
                && let Some(end) = inner.find('}')
            {
                out.push_str("${");
                out.push_str(inner[..end].trim());
                out.push('}');
                rest = &inner[end + 1..];
                continue;
            }
            if self.bare_dollar
                && let Some(inner) = rest.strip_prefix('$')
                && inner.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            {
                let end = inner
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(inner.len());
                out.push_str("${");
                out.push_str(&inner[..end]);
                out.push('}');
                rest = &inner[end..];
                continue;
            }
            let one = rest.chars().next().map_or(1, char::len_utf8);
            out.push_str(&rest[..one]);
            rest = &rest[one..];
        }
        out.push_str(rest);
        Ok((out, inputs))
    }

    /// The value of one of the host's own variables; `Ok(None)` when `name`
    /// is not one of them.
    fn host_variable(&self, name: &str) -> Result<Option<String>, TextProblem> {
        let unknown = |what: &str| TextProblem {
            code: Code::UnresolvedVariable,
            message: format!(
                "`${{{name}}}` is the {what}, which is not known where this file is read; \
                 write the path itself"
            ),
        };
        match name {
            "workspaceFolder" => match &self.project {
                Some(project) => Ok(Some(project.clone())),
                None => Err(unknown("project (workspace) directory")),
            },
            "workspaceFolderBasename" => match &self.project {
                Some(project) => Ok(Some(
                    std::path::Path::new(project)
                        .file_name()
                        .map(|name| name.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                )),
                None => Err(unknown("project (workspace) directory's name")),
            },
            "userHome" => match &self.home {
                Some(home) => Ok(Some(home.clone())),
                None => Err(unknown("home directory")),
            },
            "pathSeparator" | "/" => Ok(Some(std::path::MAIN_SEPARATOR.to_string())),
            _ => Ok(None),
        }
    }
}

/// The fields of one file that no reader asked for, each reported once per
/// file (`ignored_field`), naming the servers that set it.
#[derive(Debug, Default)]
pub(super) struct Ignored {
    /// (key, written path of its first occurrence, servers).
    fields: Vec<(String, String, Vec<String>)>,
}

/// How many servers a warning names before it counts the rest.
const NAMED_SERVERS: usize = 5;

impl Ignored {
    /// Notes every key of `r` that no reader asked for.
    pub(super) fn note_unread(&mut self, r: &FieldReader<'_>, server: &str) {
        for key in r.unread() {
            self.note(key, r.field_path(key), server);
        }
    }

    /// Notes that `server` set `key`, at `path`.
    pub(super) fn note(&mut self, key: &str, path: String, server: &str) {
        match self.fields.iter_mut().find(|(k, _, _)| k == key) {
            Some((_, _, servers)) => {
                if !servers.iter().any(|s| s == server) {
                    servers.push(server.to_owned());
                }
            }
            None => self
                .fields
                .push((key.to_owned(), path, vec![server.to_owned()])),
        }
    }

    /// One warning per ignored key, naming the host (`host` may be empty).
    /// `note` may add a sentence about a key (what the host meant by it).
    pub(super) fn into_warnings(
        self,
        host: &str,
        note: impl Fn(&str) -> Option<&'static str>,
    ) -> Vec<Diagnostic> {
        self.fields
            .into_iter()
            .map(|(key, path, servers)| {
                let mut named: Vec<String> = servers
                    .iter()
                    .take(NAMED_SERVERS)
                    .map(|s| format!("`{s}`"))
                    .collect();
                if servers.len() > NAMED_SERVERS {
                    named.push(format!("{} more", servers.len() - NAMED_SERVERS));
                }
                let which = if servers.len() == 1 {
                    format!("server {}", named.join(", "))
                } else {
                    format!("servers {}", named.join(", "))
                };
                let extra = note(&key).map(|n| format!("; {n}")).unwrap_or_default();
                let file = if host.is_empty() {
                    String::new()
                } else {
                    format!(" in this {host} file")
                };
                Diagnostic::new(
                    Code::IgnoredField,
                    None,
                    path,
                    format!(
                        "`{key}`, set by {which}{file}, has no equivalent here and was ignored{extra}"
                    ),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> TextRules {
        TextRules::new(
            &ReadContext::new()
                .with_project("/work/app")
                .with_home("/home/me"),
        )
    }

    #[test]
    fn host_forms_become_ours() {
        let mut vscode = rules();
        vscode.env_prefix = true;
        vscode.host_variables = true;
        vscode.inputs = true;
        let (text, inputs) = vscode
            .apply("${workspaceFolder}${/}x ${env:TOKEN} ${input:key} ${input:key} ${HOME} $${raw} ${workspaceFolderBasename} ${userHome}")
            .unwrap();
        assert_eq!(
            text,
            format!(
                "/work/app{}x ${{TOKEN}} ${{input:key}} ${{input:key}} ${{HOME}} $${{raw}} app /home/me",
                std::path::MAIN_SEPARATOR
            )
        );
        assert_eq!(inputs, ["key"]);

        let mut opencode = rules();
        opencode.brace_env = true;
        opencode.file_reference = Some("{file:");
        assert_eq!(
            opencode.apply("Bearer {env:API_KEY} {other}").unwrap().0,
            "Bearer ${API_KEY} {other}"
        );
        assert_eq!(
            opencode.apply("{file:~/.secret}").unwrap_err().code,
            Code::UnsupportedReference
        );

        let mut gemini = rules();
        gemini.bare_dollar = true;
        assert_eq!(
            gemini.apply("$TOKEN:${OTHER} $1 $ é$_X").unwrap().0,
            "${TOKEN}:${OTHER} $1 $ é${_X}"
        );
    }

    #[test]
    fn an_unknown_directory_is_a_problem_not_an_empty_string() {
        let mut cursor = TextRules::new(&ReadContext::new());
        cursor.host_variables = true;
        let problem = cursor.apply("${workspaceFolder}/x").unwrap_err();
        assert_eq!(problem.code, Code::UnresolvedVariable);
        assert!(
            problem.message.contains("`${workspaceFolder}`"),
            "{problem:?}"
        );
        assert!(cursor.apply("${userHome}").is_err());
        // Without host variables the text is only ours to check later.
        assert_eq!(
            TextRules::new(&ReadContext::new())
                .apply("${workspaceFolder}")
                .unwrap()
                .0,
            "${workspaceFolder}"
        );
    }
}
