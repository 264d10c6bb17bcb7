//! Trust between mcpctl's own processes on one machine: the directories, files and Unix sockets they share must belong to the user running them, and the process at the other end of a socket must be that user's.
//!
//! Another local user can reach a shared temporary directory, and an
//! `MCPCTL_DATA_DIR` (or `LOOP_DATA_DIR`) there is theirs to prepare
//! first: a `gateway/` directory, a socket that answers and a record
//! naming any pid. So every check here is made before anything is read,
//! connected to, removed or signalled:
//!
//! - [`private_dir`]: a directory is a real directory (never a symbolic
//!   link, which is not followed), owned by the effective user, and not
//!   writable by group or others (so nobody else can put an entry in it);
//! - [`own_entry`]: a file or socket in it is not a symbolic link and is
//!   owned by the effective user;
//! - [`same_user`]: the process at the other end of a connected Unix
//!   socket runs as the effective user (`SO_PEERCRED` on Linux,
//!   `getpeereid` on the BSDs and macOS, through tokio's
//!   `UnixStream::peer_cred`), and its pid where the system reports it.
//!
//! A refusal is a sentence naming the path or process and why; nothing is
//! changed on the way to it.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// The effective user id every owner and peer is compared with.
pub(crate) fn my_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Checks that `path` is a directory the effective user alone can change:
/// not a symbolic link (it is not followed), owned by the user, and not
/// writable by group or others. `Ok(false)` when it does not exist.
pub(crate) fn private_dir(path: &Path) -> Result<bool, String> {
    let Some(meta) = lstat(path)? else {
        return Ok(false);
    };
    if meta.file_type().is_symlink() {
        return Err(format!(
            "{} is a symbolic link, which mcpctl does not follow there",
            path.display()
        ));
    }
    if !meta.is_dir() {
        return Err(format!("{} is not a directory", path.display()));
    }
    owned(path, &meta)?;
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "{} is writable by other users (mode {mode:o}); `chmod go-w` it",
            path.display()
        ));
    }
    Ok(true)
}

/// What kind of entry [`own_entry`] expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A regular file.
    File,
    /// A Unix socket.
    Socket,
}

/// Checks that `path`, an entry of a [`private_dir`], is a `kind` owned by
/// the effective user and not a symbolic link. `Ok(false)` when it does
/// not exist.
pub(crate) fn own_entry(path: &Path, kind: Kind) -> Result<bool, String> {
    let Some(meta) = lstat(path)? else {
        return Ok(false);
    };
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        return Err(format!(
            "{} is a symbolic link, which mcpctl does not follow there",
            path.display()
        ));
    }
    let right_kind = match kind {
        Kind::File => file_type.is_file(),
        Kind::Socket => file_type.is_socket(),
    };
    if !right_kind {
        let expected = match kind {
            Kind::File => "a regular file",
            Kind::Socket => "a socket",
        };
        return Err(format!("{} is not {expected}", path.display()));
    }
    owned(path, &meta)?;
    Ok(true)
}

/// Checks that the process at the other end of `stream` runs as the
/// effective user, and returns its pid when the system reports one.
pub(crate) fn same_user(stream: &tokio::net::UnixStream) -> Result<Option<i32>, String> {
    same_user_as(stream, my_uid())
}

/// [`same_user`] against `uid`.
fn same_user_as(stream: &tokio::net::UnixStream, uid: u32) -> Result<Option<i32>, String> {
    let peer = stream
        .peer_cred()
        .map_err(|e| format!("cannot read the credentials of the socket's peer: {e}"))?;
    if peer.uid() != uid {
        let pid = peer
            .pid()
            .map(|pid| format!(" (pid {pid})"))
            .unwrap_or_default();
        return Err(format!(
            "the process at the other end{pid} runs as uid {}, not as this user (uid {uid})",
            peer.uid()
        ));
    }
    Ok(peer.pid())
}

fn lstat(path: &Path) -> Result<Option<std::fs::Metadata>, String> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot inspect {}: {e}", path.display())),
    }
}

fn owned(path: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    let me = my_uid();
    if meta.uid() != me {
        return Err(format!(
            "{} is owned by uid {}, not by this user (uid {me})",
            path.display(),
            meta.uid()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_directory_must_be_real_owned_and_closed_to_others() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("d");
        assert_eq!(private_dir(&dir), Ok(false));
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(private_dir(&dir), Ok(true));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let open = private_dir(&dir).unwrap_err();
        assert!(
            open.contains("writable by other users (mode 777)"),
            "{open}"
        );
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let followed = private_dir(&link).unwrap_err();
        assert!(followed.contains("symbolic link"), "{followed}");
        let file = root.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert!(private_dir(&file).unwrap_err().contains("not a directory"));
        assert!(
            own_entry(&file, Kind::Socket)
                .unwrap_err()
                .contains("not a socket")
        );
        assert_eq!(own_entry(&file, Kind::File), Ok(true));
    }

    #[tokio::test]
    async fn a_peer_of_another_user_is_refused() {
        let (a, _b) = tokio::net::UnixStream::pair().unwrap();
        let pid = same_user(&a).unwrap();
        assert_eq!(pid, Some(std::process::id() as i32));
        let other = my_uid().wrapping_add(1);
        let refused = same_user_as(&a, other).unwrap_err();
        assert!(
            refused.contains(&format!(
                "runs as uid {}, not as this user (uid {other})",
                my_uid()
            )),
            "{refused}"
        );
    }
}
