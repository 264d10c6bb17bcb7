//! The hosts whose MCP configuration files this crate reads: their names, labels, formats and where their files are.
//!
//! [`HostSources`] lists, for a home directory, an operating system and a
//! project, the standard user- and project-level files of every [`Host`],
//! each a [`FileSource`] labelled with the host's name, its
//! [`ConfigLevel`] and its [`Format`]. The home directory and the
//! environment's directories (`XDG_CONFIG_HOME`, `APPDATA`, ...) are inputs
//! ([`HostDirs`]): nothing here reads the process environment unless asked
//! to through [`HostDirs::from_env`].
//!
//! Precedence between these files follows discovery's rules
//! ([`crate::Discovery`]): a project-level file wins over a user-level one;
//! between two hosts at the same level, the host earlier in [`Host::ALL`]
//! wins; between two files of one host at one level, the one listed first
//! below wins.
//!
//! | Host | User level | Project level |
//! |---|---|---|
//! | Claude Code | `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json`), read with the project for its `projects.<dir>` entries | `.mcp.json` |
//! | Claude Desktop | Linux `$XDG_CONFIG_HOME/Claude/`, macOS `~/Library/Application Support/Claude/`, Windows `%APPDATA%\Claude\`: `claude_desktop_config.json` | |
//! | Cursor | `~/.cursor/mcp.json` | `.cursor/mcp.json` |
//! | VS Code | Linux `$XDG_CONFIG_HOME/Code/User/mcp.json`, macOS `~/Library/Application Support/Code/User/mcp.json`, Windows `%APPDATA%\Code\User\mcp.json` | `.vscode/mcp.json` |
//! | Windsurf | `~/.codeium/windsurf/mcp_config.json` | |
//! | Codex | `~/.codex/config.toml` (`$CODEX_HOME/config.toml`) | `.codex/config.toml` |
//! | Gemini CLI | `~/.gemini/settings.json` | `.gemini/settings.json` |
//! | Zed | Linux `$XDG_CONFIG_HOME/zed/settings.json`, macOS `~/.config/zed/settings.json`, Windows `%APPDATA%\Zed\settings.json` | `.zed/settings.json` |
//! | goose | Linux and macOS `$XDG_CONFIG_HOME/goose/config.yaml`, Windows `%APPDATA%\Block\goose\config\config.yaml` | |
//! | opencode | `$XDG_CONFIG_HOME/opencode/opencode.json`, then `opencode.jsonc` (every OS) | `.opencode/opencode.json`, `.opencode/opencode.jsonc`, `opencode.json`, `opencode.jsonc` |
//! | Cline | the VS Code extension's `<VS Code user dir>/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json`, then the CLI's `~/.cline/data/settings/cline_mcp_settings.json` | |
//!
//! `$XDG_CONFIG_HOME` is `~/.config` when unset (or not absolute, as the
//! XDG base directory rules say); `%APPDATA%` is `~\AppData\Roaming` when
//! unset.

#[cfg(feature = "host-configs")]
use std::path::{Path, PathBuf};

#[cfg(feature = "host-configs")]
use crate::discovery::{ConfigLevel, Discovery, FileSource};
#[cfg(feature = "host-configs")]
use crate::expand::Environment;
#[cfg(feature = "host-configs")]
use crate::format::{Format, ReadContext};
#[cfg(feature = "host-configs")]
use crate::host::Host;

/// An operating system, as far as where applications keep their files goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Os {
    /// Linux and the other Unix-like systems that follow the XDG base
    /// directory rules.
    Linux,
    /// macOS.
    MacOs,
    /// Windows.
    Windows,
}

impl Os {
    /// The system this program was built for.
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }
}

#[cfg(feature = "host-configs")]
/// The directories host files are found under: the home directory and the
/// overrides the environment may set. Every field is an input, so a test
/// (or a host with its own idea of home) can point them anywhere.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostDirs {
    /// The person's home directory (`~`).
    pub home: PathBuf,
    /// The system whose conventions apply.
    pub os: Os,
    /// `XDG_CONFIG_HOME`; `None` (or a relative path): `~/.config`.
    pub xdg_config_home: Option<PathBuf>,
    /// `APPDATA` (Windows); `None`: `~\AppData\Roaming`.
    pub appdata: Option<PathBuf>,
    /// `CODEX_HOME`; `None`: `~/.codex`.
    pub codex_home: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR`, where Claude Code keeps `.claude.json`;
    /// `None`: the home directory.
    pub claude_config_dir: Option<PathBuf>,
}

#[cfg(feature = "host-configs")]
impl HostDirs {
    /// The directories under `home` on `os`, with no overrides.
    pub fn new(home: impl Into<PathBuf>, os: Os) -> Self {
        HostDirs {
            home: home.into(),
            os,
            xdg_config_home: None,
            appdata: None,
            codex_home: None,
            claude_config_dir: None,
        }
    }

    /// The directories an environment names: the home directory from `HOME`
    /// (on Windows `USERPROFILE`, then `HOME`), and `XDG_CONFIG_HOME`,
    /// `APPDATA`, `CODEX_HOME` and `CLAUDE_CONFIG_DIR` when set and not
    /// empty. `None` when there is no home directory.
    pub fn from_env<E: Environment + ?Sized>(env: &E, os: Os) -> Option<Self> {
        let var = |name: &str| env.var(name).filter(|value| !value.is_empty());
        let home = match os {
            Os::Windows => var("USERPROFILE").or_else(|| var("HOME")),
            Os::Linux | Os::MacOs => var("HOME"),
        }?;
        let mut dirs = HostDirs::new(home, os);
        dirs.xdg_config_home = var("XDG_CONFIG_HOME").map(PathBuf::from);
        dirs.appdata = var("APPDATA").map(PathBuf::from);
        dirs.codex_home = var("CODEX_HOME").map(PathBuf::from);
        dirs.claude_config_dir = var("CLAUDE_CONFIG_DIR").map(PathBuf::from);
        Some(dirs)
    }

    /// `$XDG_CONFIG_HOME`, or `~/.config`.
    fn config_home(&self) -> PathBuf {
        match &self.xdg_config_home {
            Some(dir) if dir.is_absolute() => dir.clone(),
            _ => self.home.join(".config"),
        }
    }

    /// `%APPDATA%`, or `~\AppData\Roaming`.
    fn appdata(&self) -> PathBuf {
        self.appdata
            .clone()
            .unwrap_or_else(|| self.home.join("AppData").join("Roaming"))
    }

    /// `~/Library/Application Support` (macOS).
    fn application_support(&self) -> PathBuf {
        self.home.join("Library").join("Application Support")
    }

    /// VS Code's user directory (`.../Code/User`).
    fn vscode_user(&self) -> PathBuf {
        let base = match self.os {
            Os::Linux => self.config_home(),
            Os::MacOs => self.application_support(),
            Os::Windows => self.appdata(),
        };
        base.join("Code").join("User")
    }

    /// The host's user-level files, the one that wins first.
    fn user_files(&self, host: Host) -> Vec<(PathBuf, Format)> {
        let format = host.format();
        let one = |path: PathBuf| vec![(path, format)];
        match host {
            Host::ClaudeDesktop => {
                let base = match self.os {
                    Os::Linux => self.config_home(),
                    Os::MacOs => self.application_support(),
                    Os::Windows => self.appdata(),
                };
                one(base.join("Claude").join("claude_desktop_config.json"))
            }
            Host::ClaudeCode => one(self
                .claude_config_dir
                .as_deref()
                .unwrap_or(&self.home)
                .join(".claude.json")),
            Host::Cursor => one(self.home.join(".cursor").join("mcp.json")),
            Host::VsCode => one(self.vscode_user().join("mcp.json")),
            Host::Windsurf => one(self
                .home
                .join(".codeium")
                .join("windsurf")
                .join("mcp_config.json")),
            Host::Codex => one(self
                .codex_home
                .clone()
                .unwrap_or_else(|| self.home.join(".codex"))
                .join("config.toml")),
            Host::GeminiCli => one(self.home.join(".gemini").join("settings.json")),
            Host::Zed => {
                let dir = match self.os {
                    Os::Linux => self.config_home().join("zed"),
                    Os::MacOs => self.home.join(".config").join("zed"),
                    Os::Windows => self.appdata().join("Zed"),
                };
                one(dir.join("settings.json"))
            }
            Host::Goose => {
                let dir = match self.os {
                    Os::Linux | Os::MacOs => self.config_home().join("goose"),
                    Os::Windows => self.appdata().join("Block").join("goose").join("config"),
                };
                one(dir.join("config.yaml"))
            }
            Host::OpenCode => {
                let dir = self.config_home().join("opencode");
                vec![
                    (dir.join("opencode.json"), format),
                    (dir.join("opencode.jsonc"), format),
                ]
            }
            Host::Cline => {
                let settings = |dir: PathBuf| dir.join("settings").join("cline_mcp_settings.json");
                vec![
                    (
                        settings(
                            self.vscode_user()
                                .join("globalStorage")
                                .join("saoudrizwan.claude-dev"),
                        ),
                        format,
                    ),
                    (settings(self.home.join(".cline").join("data")), format),
                ]
            }
        }
    }
}

#[cfg(feature = "host-configs")]
/// The host's project-level files under `project`, the one that wins first.
fn project_files(host: Host, project: &Path) -> Vec<(PathBuf, Format)> {
    let format = host.format();
    match host {
        // The project file is a plain `mcpServers` document; Claude Code's
        // own format is the user file's.
        Host::ClaudeCode => vec![(project.join(".mcp.json"), Format::McpServers)],
        Host::Cursor => vec![(project.join(".cursor").join("mcp.json"), format)],
        Host::VsCode => vec![(project.join(".vscode").join("mcp.json"), format)],
        Host::Codex => vec![(project.join(".codex").join("config.toml"), format)],
        Host::GeminiCli => vec![(project.join(".gemini").join("settings.json"), format)],
        Host::Zed => vec![(project.join(".zed").join("settings.json"), format)],
        Host::OpenCode => vec![
            (project.join(".opencode").join("opencode.json"), format),
            (project.join(".opencode").join("opencode.jsonc"), format),
            (project.join("opencode.json"), format),
            (project.join("opencode.jsonc"), format),
        ],
        Host::ClaudeDesktop | Host::Windsurf | Host::Goose | Host::Cline => Vec::new(),
    }
}

#[cfg(feature = "host-configs")]
/// One standard file of a host: where it is, its level and its format.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostFile {
    /// The application.
    pub host: Host,
    /// User or project level.
    pub level: ConfigLevel,
    /// The file.
    pub path: PathBuf,
    /// The format it is read in.
    pub format: Format,
}

#[cfg(feature = "host-configs")]
impl HostFile {
    /// The file as a discovery source, read with `context`.
    pub fn source(&self, context: &ReadContext) -> FileSource {
        FileSource::for_host(self.host, self.level, self.path.clone(), self.format)
            .with_context(context.clone())
    }
}

#[cfg(feature = "host-configs")]
/// The standard MCP configuration files of every [`Host`] (or of some), for
/// a home directory, an operating system and, optionally, a project: what a
/// host embedding this crate adds to [`Discovery`] so that the servers a
/// person configured in other applications are found without flags.
///
/// [`HostSources::files`] lists the project-level files first (in the
/// order of [`Host::ALL`]), then the user-level ones; that is also the order
/// of precedence discovery applies. The module documentation has the table
/// of files.
///
/// ```
/// use mcp_config::{Discovery, DiscoveryOptions, Host, HostDirs, HostSources, Os};
///
/// let home = tempfile::tempdir()?;
/// let project = tempfile::tempdir()?;
/// std::fs::create_dir_all(home.path().join(".config/Claude"))?;
/// std::fs::write(
///     home.path().join(".config/Claude/claude_desktop_config.json"),
///     r#"{"mcpServers": {"fs": {"command": "mcp-fs"}}}"#,
/// )?;
/// std::fs::write(
///     project.path().join(".mcp.json"),
///     r#"{"mcpServers": {"fs": {"command": "mcp-fs", "args": ["--ro"]}}}"#,
/// )?;
///
/// let hosts = HostSources::new(HostDirs::new(home.path(), Os::Linux)).project(project.path());
/// let report = hosts.add_to(Discovery::new(DiscoveryOptions::default())).discover();
///
/// let fs = report.servers().next().unwrap();
/// assert_eq!(fs.source.provider_label, "Claude Code"); // the project's .mcp.json
/// assert_eq!(fs.source.host, Some(Host::ClaudeCode));
/// assert_eq!(report.shadowed[0].source().host, Some(Host::ClaudeDesktop));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostSources {
    dirs: HostDirs,
    project: Option<PathBuf>,
    hosts: Vec<Host>,
}

#[cfg(feature = "host-configs")]
impl HostSources {
    /// Every host's user-level files under `dirs`; no project yet.
    pub fn new(dirs: HostDirs) -> Self {
        HostSources {
            dirs,
            project: None,
            hosts: Host::ALL.to_vec(),
        }
    }

    /// Also the project-level files under `dir` (absolute, as hosts record
    /// projects by their absolute path), and user files read for that
    /// project (Claude Code's `projects.<dir>` entries).
    pub fn project(mut self, dir: impl Into<PathBuf>) -> Self {
        self.project = Some(dir.into());
        self
    }

    /// Only these hosts' files (still in the order of [`Host::ALL`]).
    pub fn only(mut self, hosts: impl IntoIterator<Item = Host>) -> Self {
        let wanted: Vec<Host> = hosts.into_iter().collect();
        self.hosts = Host::ALL
            .into_iter()
            .filter(|host| wanted.contains(host))
            .collect();
        self
    }

    /// The directories the files are found under.
    pub fn dirs(&self) -> &HostDirs {
        &self.dirs
    }

    /// What every file is read with: the project and the home directory.
    pub fn context(&self) -> ReadContext {
        let context = ReadContext::new().with_home(self.dirs.home.clone());
        match &self.project {
            Some(project) => context.with_project(project.clone()),
            None => context,
        }
    }

    /// Every file looked at: the project level first, then the user level;
    /// within a level in the order of [`Host::ALL`], then the host's own
    /// order. Earlier wins.
    pub fn files(&self) -> Vec<HostFile> {
        let mut files = Vec::new();
        if let Some(project) = &self.project {
            for &host in &self.hosts {
                files.extend(
                    project_files(host, project)
                        .into_iter()
                        .map(|(path, format)| HostFile {
                            host,
                            level: ConfigLevel::Project,
                            path,
                            format,
                        }),
                );
            }
        }
        files.extend(self.user_files());
        files
    }

    /// The user-level files only, in precedence order.
    pub fn user_files(&self) -> Vec<HostFile> {
        self.hosts
            .iter()
            .flat_map(|&host| {
                self.dirs
                    .user_files(host)
                    .into_iter()
                    .map(move |(path, format)| HostFile {
                        host,
                        level: ConfigLevel::User,
                        path,
                        format,
                    })
            })
            .collect()
    }

    /// The project-level files only, in precedence order (none without a
    /// project).
    pub fn project_files(&self) -> Vec<HostFile> {
        self.files()
            .into_iter()
            .filter(|file| file.level == ConfigLevel::Project)
            .collect()
    }

    /// Every file as a discovery source, in [`HostSources::files`] order.
    pub fn sources(&self) -> Vec<FileSource> {
        let context = self.context();
        self.files()
            .iter()
            .map(|file| file.source(&context))
            .collect()
    }

    /// `discovery` with every file added as a source, in precedence order.
    pub fn add_to(&self, discovery: Discovery) -> Discovery {
        self.sources()
            .into_iter()
            .fold(discovery, |discovery, source| discovery.source(source))
    }
}

#[cfg(feature = "host-configs")]
#[cfg(test)]
mod tests {
    use super::*;

    /// `(host, level, path relative to root)` of every file, `~` and
    /// `<project>` spelled out.
    fn files_of(sources: &HostSources, home: &Path, project: &Path) -> Vec<String> {
        sources
            .files()
            .iter()
            .map(|file| {
                let path = if let Ok(rest) = file.path.strip_prefix(project) {
                    format!("<project>/{}", rest.display())
                } else if let Ok(rest) = file.path.strip_prefix(home) {
                    format!("~/{}", rest.display())
                } else {
                    file.path.display().to_string()
                };
                format!("{} {} {path}", file.host.id(), file.level.as_str())
            })
            .collect::<Vec<_>>()
    }

    #[test]
    fn linux_files_are_under_home_and_xdg_config_home() {
        let home = Path::new("/home/ada");
        let project = Path::new("/work/repo");
        let sources = HostSources::new(HostDirs::new(home, Os::Linux)).project(project);
        let listing = files_of(&sources, home, project);
        let project_level = [
            "claude-code project <project>/.mcp.json",
            "cursor project <project>/.cursor/mcp.json",
            "vscode project <project>/.vscode/mcp.json",
            "codex project <project>/.codex/config.toml",
            "gemini project <project>/.gemini/settings.json",
            "zed project <project>/.zed/settings.json",
            "opencode project <project>/.opencode/opencode.json",
            "opencode project <project>/.opencode/opencode.jsonc",
            "opencode project <project>/opencode.json",
            "opencode project <project>/opencode.jsonc",
        ];
        let user_level = [
            "claude-code user ~/.claude.json",
            "claude-desktop user ~/.config/Claude/claude_desktop_config.json",
            "cursor user ~/.cursor/mcp.json",
            "vscode user ~/.config/Code/User/mcp.json",
            "windsurf user ~/.codeium/windsurf/mcp_config.json",
            "codex user ~/.codex/config.toml",
            "gemini user ~/.gemini/settings.json",
            "zed user ~/.config/zed/settings.json",
            "goose user ~/.config/goose/config.yaml",
            "opencode user ~/.config/opencode/opencode.json",
            "opencode user ~/.config/opencode/opencode.jsonc",
            "cline user ~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
            "cline user ~/.cline/data/settings/cline_mcp_settings.json",
        ];
        let expected: Vec<&str> = project_level.iter().chain(&user_level).copied().collect();
        assert_eq!(listing, expected);

        // XDG_CONFIG_HOME moves what lives under ~/.config, and nothing else.
        let mut dirs = HostDirs::new(home, Os::Linux);
        dirs.xdg_config_home = Some(PathBuf::from("/xdg"));
        let moved = files_of(&HostSources::new(dirs), home, project);
        let expected: Vec<String> = user_level
            .iter()
            .map(|line| line.replace("~/.config/", "/xdg/"))
            .collect();
        assert_eq!(moved, expected);
        // A relative XDG_CONFIG_HOME is ignored, as the XDG rules say.
        let mut dirs = HostDirs::new(home, Os::Linux);
        dirs.xdg_config_home = Some(PathBuf::from("relative/dir"));
        assert_eq!(files_of(&HostSources::new(dirs), home, project), user_level);
    }

    #[test]
    fn macos_files_are_under_application_support_and_dot_config() {
        let home = Path::new("/Users/ada");
        let sources = HostSources::new(HostDirs::new(home, Os::MacOs));
        let listing = files_of(&sources, home, Path::new("/nowhere"));
        assert_eq!(
            listing,
            [
                "claude-code user ~/.claude.json",
                "claude-desktop user ~/Library/Application Support/Claude/claude_desktop_config.json",
                "cursor user ~/.cursor/mcp.json",
                "vscode user ~/Library/Application Support/Code/User/mcp.json",
                "windsurf user ~/.codeium/windsurf/mcp_config.json",
                "codex user ~/.codex/config.toml",
                "gemini user ~/.gemini/settings.json",
                "zed user ~/.config/zed/settings.json",
                "goose user ~/.config/goose/config.yaml",
                "opencode user ~/.config/opencode/opencode.json",
                "opencode user ~/.config/opencode/opencode.jsonc",
                "cline user ~/Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
                "cline user ~/.cline/data/settings/cline_mcp_settings.json",
            ]
        );
    }

    #[test]
    fn windows_files_are_under_appdata() {
        let home = Path::new("/c/Users/ada");
        let mut dirs = HostDirs::new(home, Os::Windows);
        dirs.appdata = Some(PathBuf::from("/roaming"));
        let listing = files_of(&HostSources::new(dirs), home, Path::new("/nowhere"));
        let appdata: Vec<&String> = listing.iter().filter(|l| l.contains("/roaming/")).collect();
        assert_eq!(
            appdata,
            [
                "claude-desktop user /roaming/Claude/claude_desktop_config.json",
                "vscode user /roaming/Code/User/mcp.json",
                "zed user /roaming/Zed/settings.json",
                "goose user /roaming/Block/goose/config/config.yaml",
                "cline user /roaming/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
            ]
        );
        // Without APPDATA: the roaming profile under home.
        let listing = files_of(
            &HostSources::new(HostDirs::new(home, Os::Windows)).only([Host::VsCode]),
            home,
            Path::new("/nowhere"),
        );
        assert_eq!(
            listing,
            ["vscode user ~/AppData/Roaming/Code/User/mcp.json"]
        );
    }

    #[test]
    fn the_environment_names_the_directories() {
        struct Vars(&'static [(&'static str, &'static str)]);
        impl Environment for Vars {
            fn var(&self, name: &str) -> Option<String> {
                self.0
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        }
        let env = Vars(&[
            ("HOME", "/home/ada"),
            ("USERPROFILE", "/c/Users/ada"),
            ("XDG_CONFIG_HOME", "/xdg"),
            ("APPDATA", "/roaming"),
            ("CODEX_HOME", "/codex"),
            ("CLAUDE_CONFIG_DIR", "/claude"),
        ]);
        let linux = HostDirs::from_env(&env, Os::Linux).unwrap();
        assert_eq!(linux.home, Path::new("/home/ada"));
        assert_eq!(linux.xdg_config_home.as_deref(), Some(Path::new("/xdg")));
        let windows = HostDirs::from_env(&env, Os::Windows).unwrap();
        assert_eq!(windows.home, Path::new("/c/Users/ada"));
        let files: Vec<PathBuf> = HostSources::new(linux)
            .only([Host::Codex, Host::ClaudeCode])
            .files()
            .into_iter()
            .map(|file| file.path)
            .collect();
        assert_eq!(
            files,
            [
                Path::new("/claude/.claude.json"),
                Path::new("/codex/config.toml")
            ]
        );
        assert_eq!(HostDirs::from_env(&Vars(&[("HOME", "")]), Os::Linux), None);
    }

    #[test]
    fn each_file_is_read_in_its_hosts_format_with_project_and_home() {
        let sources = HostSources::new(HostDirs::new("/home/ada", Os::Linux)).project("/repo");
        for file in sources.files() {
            let expected = if file.path.ends_with(".mcp.json") {
                Format::McpServers
            } else {
                file.host.format()
            };
            assert_eq!(file.format, expected, "{file:?}");
        }
        let context = sources.context();
        assert_eq!(context.project_dir.as_deref(), Some(Path::new("/repo")));
        assert_eq!(context.home_dir.as_deref(), Some(Path::new("/home/ada")));
        let meta = crate::ConfigSource::meta(&sources.sources()[0]);
        assert_eq!(meta.provider_label, "Claude Code");
        assert_eq!(meta.host, Some(Host::ClaudeCode));
        assert_eq!(meta.level, ConfigLevel::Project);
        // Every host has at least one file, and no file belongs to two hosts.
        let files = sources.files();
        for host in Host::ALL {
            assert!(files.iter().any(|file| file.host == host), "{host}");
        }
        for file in &files {
            assert_eq!(files.iter().filter(|f| f.path == file.path).count(), 1);
        }
    }
}
