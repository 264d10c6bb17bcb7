//! The Skills extension on the client (`io.modelcontextprotocol/skills`, SEP-2640): listing entries, and loading a skill and reading its files only as they are needed, each verified before it is handed on.
//!
//! - [`Client::list_skills`] and [`Client::get_skill`] fetch entries; the
//!   session refuses both (nothing sent) when the server did not declare
//!   the extension. Listing reads no file ("Lazy Retrieval").
//! - [`Client::load_skill`] is the skill-loading path: it checks the entry
//!   ([`Skill::check_entry`]), reads the `SKILL.md`, verifies its size and
//!   digest and compares its frontmatter with the entry's, and only then
//!   returns a [`LoadedSkill`] with the text. A plain `resources/read` of a
//!   `SKILL.md` is not a load.
//! - [`Client::read_skill_file`] reads one file of a loaded skill: only a
//!   file the held entry lists, and only bytes that match it.
//!
//! Content that fails verification is never returned: the error says which
//! rule failed ([`SkillError::code`]) and the bytes are dropped.

use mcp_proto::methods;
use mcp_proto::types::{
    GetSkillRequestParams, GetSkillResult, ListSkillsRequestParams, ListSkillsResult,
    ReadResourceRequestParams, ReadResourceResult, Skill, SkillError,
};

use crate::client::{CallOptions, Client, ClientError};

/// A skill loaded through [`Client::load_skill`]: the entry it was loaded
/// from (held for as long as the host acts on the skill) and the verified
/// `SKILL.md`.
#[derive(Clone, Debug)]
pub struct LoadedSkill {
    /// The entry the skill was verified against.
    pub entry: Skill,
    /// The `SKILL.md` text, frontmatter included.
    pub text: String,
}

/// Why a skill could not be loaded or one of its files read.
#[derive(Debug, thiserror::Error)]
pub enum SkillLoadError {
    /// The request failed (the server's error, a timeout, a closed connection).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The entry or the content broke a rule of the extension; nothing was used.
    #[error(transparent)]
    Verification(#[from] SkillError),
}

impl SkillLoadError {
    /// A stable code: the verification's ([`SkillError::code`]), or
    /// `request_failed` when the request itself failed.
    pub fn code(&self) -> &'static str {
        match self {
            SkillLoadError::Client(_) => "request_failed",
            SkillLoadError::Verification(error) => error.code(),
        }
    }
}

impl Client {
    /// `skills/list`: one page of skill entries. Refused by the session
    /// when the server did not declare the extension.
    pub async fn list_skills(
        &self,
        cursor: Option<String>,
    ) -> Result<ListSkillsResult, ClientError> {
        let params = ListSkillsRequestParams {
            cursor,
            ..Default::default()
        };
        self.request(methods::SKILLS_LIST, Some(&params), CallOptions::default())
            .await
    }

    /// `skills/list` with full parameters and per-call options.
    pub async fn list_skills_with(
        &self,
        params: &ListSkillsRequestParams,
        options: CallOptions,
    ) -> Result<ListSkillsResult, ClientError> {
        self.request(methods::SKILLS_LIST, Some(params), options)
            .await
    }

    /// Every page of `skills/list`, following `nextCursor` until a page
    /// has none, or a cursor repeats, or `max_pages` pages were read.
    pub async fn list_all_skills(&self, max_pages: usize) -> Result<Vec<Skill>, ClientError> {
        let mut skills = Vec::new();
        let mut cursor = None;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..max_pages {
            let page = self.list_skills(cursor.take()).await?;
            skills.extend(page.skills);
            match page.next_cursor {
                Some(next) if !next.is_empty() && seen.insert(next.clone()) => cursor = Some(next),
                _ => break,
            }
        }
        Ok(skills)
    }

    /// `skills/get`: the current entry for the skill whose `SKILL.md` is
    /// at `uri` (a skill known only by its URI, or one whose files no
    /// longer match a held entry).
    pub async fn get_skill(&self, uri: &str) -> Result<GetSkillResult, ClientError> {
        let params = GetSkillRequestParams {
            uri: uri.to_owned(),
            ..Default::default()
        };
        self.request(methods::SKILLS_GET, Some(&params), CallOptions::default())
            .await
    }

    /// Loads the skill `entry` describes: checks the entry, reads its
    /// `SKILL.md`, verifies the bytes against the entry (size and digest
    /// when it lists its files) and the frontmatter against the entry's.
    /// Reads nothing else.
    pub async fn load_skill(&self, entry: &Skill) -> Result<LoadedSkill, SkillLoadError> {
        self.load_skill_with(entry, CallOptions::default()).await
    }

    /// [`Client::load_skill`] with per-call options for the read.
    pub async fn load_skill_with(
        &self,
        entry: &Skill,
        options: CallOptions,
    ) -> Result<LoadedSkill, SkillLoadError> {
        entry.check_entry()?;
        let result = self
            .read_resource_with(&read_params(&entry.uri), options)
            .await?;
        let text = entry.verified_skill_md(&result)?;
        Ok(LoadedSkill {
            entry: entry.clone(),
            text,
        })
    }

    /// Reads `file`, one of the files `skill`'s held entry lists, and
    /// returns the read's result, reduced to the one contents item whose
    /// bytes matched the entry. A file the entry does not list is refused
    /// without a request.
    pub async fn read_skill_file(
        &self,
        skill: &LoadedSkill,
        file: &str,
    ) -> Result<ReadResourceResult, SkillLoadError> {
        self.read_skill_file_with(skill, file, CallOptions::default())
            .await
    }

    /// [`Client::read_skill_file`] with per-call options.
    pub async fn read_skill_file_with(
        &self,
        skill: &LoadedSkill,
        file: &str,
        options: CallOptions,
    ) -> Result<ReadResourceResult, SkillLoadError> {
        skill.entry.listed_file(file)?;
        let result = self.read_resource_with(&read_params(file), options).await?;
        Ok(skill.entry.verified_file(result, file)?)
    }
}

fn read_params(uri: &str) -> ReadResourceRequestParams {
    ReadResourceRequestParams {
        uri: uri.to_owned(),
        ..Default::default()
    }
}
