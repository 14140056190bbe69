//! Inputs and outputs as a Unix tool treats them: `-` is standard input or output; a graph file is
//! mapped rather than copied; every output path is checked before any work, and a file is written
//! beside its place and renamed into it once complete, so a failed run leaves no half-written
//! file; a reader that closes the pipe early ends the output quietly.

use crate::Failure;
use std::fs::File;
use std::io::{ErrorKind, IsTerminal, Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

/// Whether `path` names standard input or output.
pub fn is_dash(path: &Path) -> bool {
    path == Path::new("-")
}

/// How a path is named in messages.
pub fn named(path: &Path) -> String {
    if is_dash(path) {
        "standard input".into()
    } else {
        path.display().to_string()
    }
}

/// A text input (a plan, scenarios, a manifest), from its file or standard input.
pub fn read_text(path: &Path) -> Result<String, Failure> {
    let read = if is_dash(path) {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(path)
    };
    read.map_err(|e| Failure::input(format!("cannot read {}: {e}", named(path))))
}

/// A graph document's bytes: mapped from the file rather than copied, since copying a large
/// document costs a page fault per 4 KiB of fresh memory (about a tenth of a 10^6-node run);
/// read whole from standard input, a pipe or a device.
pub enum GraphBytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl GraphBytes {
    pub fn open(path: &Path) -> Result<Self, Failure> {
        let failure =
            |e: std::io::Error| Failure::input(format!("cannot read {}: {e}", named(path)));
        if is_dash(path) {
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut bytes)
                .map_err(failure)?;
            return Ok(GraphBytes::Read(bytes));
        }
        let file = File::open(path).map_err(failure)?;
        let metadata = file.metadata().map_err(failure)?;
        // An empty file cannot be mapped; a pipe or a device has no length to map.
        if metadata.len() == 0 || !metadata.is_file() {
            let mut bytes = Vec::new();
            (&file).read_to_end(&mut bytes).map_err(failure)?;
            return Ok(GraphBytes::Read(bytes));
        }
        // SAFETY: the map is only read, and only while this process holds it. Another process
        // truncating the file meanwhile would end this one with SIGBUS, as it would any tool that
        // maps its input (ripgrep, for one); the planner never writes its input.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(failure)?;
        Ok(GraphBytes::Mapped(map))
    }

    pub fn bytes(&self) -> &[u8] {
        match self {
            GraphBytes::Mapped(map) => &map[..],
            GraphBytes::Read(bytes) => &bytes[..],
        }
    }
}

/// At most one input may be standard input: a second `-` would read what the first left.
pub fn one_standard_input<'a>(inputs: impl IntoIterator<Item = &'a Path>) -> Result<(), Failure> {
    if inputs.into_iter().filter(|p| is_dash(p)).count() > 1 {
        return Err(Failure::usage(
            "only one input can be standard input (-)".to_string(),
        ));
    }
    Ok(())
}

/// Whether `path` names this process's descriptor `fd` (`/dev/stdout`, `/dev/fd/1`, …).
fn names_fd(path: &Path, fd: u32) -> bool {
    let named = match fd {
        1 => "/dev/stdout",
        2 => "/dev/stderr",
        _ => "",
    };
    path == Path::new(named)
        || path == Path::new(&format!("/dev/fd/{fd}"))
        || path == Path::new(&format!("/proc/self/fd/{fd}"))
}

/// Where one output goes, made ready before any work is done.
pub enum Sink {
    Stdout,
    /// A regular file: written to a new file beside `target` (the file a link names), which then
    /// takes its place. `shown` is the path as given, for messages.
    File {
        shown: PathBuf,
        target: PathBuf,
        directory: PathBuf,
        /// The permissions of the file replaced, kept.
        permissions: Option<std::fs::Permissions>,
    },
    /// Something that is not a regular file (`/dev/null`, a named pipe, `/dev/stdout`): written
    /// in place, since it cannot be replaced.
    Special {
        shown: PathBuf,
        file: File,
    },
}

impl Sink {
    /// The sink for `-o PATH`: standard output for none or `-`. A file must be one this process
    /// may write, in a directory that takes a new file, now, before the run: an output that
    /// cannot be written fails at once.
    pub fn prepare(path: Option<&Path>) -> Result<Sink, Failure> {
        match path {
            None => Ok(Sink::Stdout),
            Some(p) if is_dash(p) || names_fd(p, 1) => Ok(Sink::Stdout),
            Some(p) if names_fd(p, 2) => {
                // The same open file as this process's standard error (appending, if the shell
                // redirected it with >>), not the file reopened from its start.
                let stderr = std::io::stderr().as_fd().try_clone_to_owned();
                let file =
                    File::from(stderr.map_err(|e| {
                        Failure::input(format!("cannot write {}: {e}", p.display()))
                    })?);
                Ok(Sink::Special {
                    shown: p.to_path_buf(),
                    file,
                })
            }
            Some(p) => Sink::file(p),
        }
    }

    fn file(path: &Path) -> Result<Sink, Failure> {
        let failure =
            |e: std::io::Error| Failure::input(format!("cannot write {}: {e}", path.display()));
        let refused = |why: &str| Failure::input(format!("cannot write {}: {why}", path.display()));
        if path.as_os_str().to_string_lossy().ends_with('/') {
            return Err(refused("a file's path cannot end in /"));
        }
        // Devices and the process's own descriptors (`/dev/stdout` names whatever the shell
        // redirected it to) are written in place, never replaced.
        let special = path.starts_with("/dev") || path.starts_with("/proc");
        // Through a symbolic link to the file it names, which is the one replaced.
        let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let existing = std::fs::metadata(&target).ok();
        if existing.as_ref().is_some_and(std::fs::Metadata::is_dir) {
            return Err(refused("it is a directory"));
        }
        if special || existing.as_ref().is_some_and(|m| !m.is_file()) {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(failure)?;
            return Ok(Sink::Special {
                shown: path.to_path_buf(),
                file,
            });
        }
        if existing.is_some() {
            // A file this process may not write is not replaced behind its back, as `>` would
            // not write it: opened for writing (not truncated) to ask.
            std::fs::OpenOptions::new()
                .write(true)
                .open(&target)
                .map_err(failure)?;
        }
        let directory = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // The directory takes a new file: asked with a file that has no name, so that a run
        // killed meanwhile leaves nothing behind.
        tempfile::tempfile_in(&directory).map_err(failure)?;
        Ok(Sink::File {
            shown: path.to_path_buf(),
            target,
            directory,
            permissions: existing.map(|m| m.permissions()),
        })
    }

    /// The file this sink replaces, if it replaces one: two outputs must not name the same.
    pub fn target(&self) -> Option<&Path> {
        match self {
            Sink::File { target, .. } => Some(target),
            _ => None,
        }
    }

    /// Writes `parts` one after another, then puts a file in its place. Standard output closed
    /// by its reader (`| head`) ends the output quietly.
    pub fn write<'a>(self, parts: impl IntoIterator<Item = &'a str>) -> Result<(), Failure> {
        match self {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                let written = (parts.into_iter())
                    .try_for_each(|part| out.write_all(part.as_bytes()))
                    .and_then(|()| out.flush());
                match written {
                    Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
                    written => written.map_err(|e| {
                        Failure::input(format!("cannot write to standard output: {e}"))
                    }),
                }
            }
            Sink::Special { shown, mut file } => (parts.into_iter())
                .try_for_each(|part| file.write_all(part.as_bytes()))
                .map_err(|e| Failure::input(format!("cannot write {}: {e}", shown.display()))),
            Sink::File {
                shown,
                target,
                directory,
                permissions,
            } => {
                let failure = |e: std::io::Error| {
                    Failure::input(format!("cannot write {}: {e}", shown.display()))
                };
                // Read and write for all, less the umask, as a file made by `>` would be; a file
                // replaced keeps its own permissions.
                let mut builder = tempfile::Builder::new();
                builder.prefix(".partition-planner-");
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    builder.permissions(std::fs::Permissions::from_mode(0o666));
                }
                let mut temporary = builder.tempfile_in(&directory).map_err(failure)?;
                if let Some(permissions) = permissions {
                    temporary
                        .as_file()
                        .set_permissions(permissions)
                        .map_err(failure)?;
                }
                for part in parts {
                    temporary.write_all(part.as_bytes()).map_err(failure)?;
                }
                // The old file is removed before the complete new one takes its name: renamed
                // over it, ext4 (auto_da_alloc) would flush the new file's blocks at once, 85 ms
                // of a 10^6-node run (1.07x) and 0.6 ms of Qwen3.5's (1.1x). A reader at that
                // instant finds no file, never a partial one.
                match std::fs::remove_file(&target) {
                    Err(e) if e.kind() != ErrorKind::NotFound => return Err(failure(e)),
                    _ => {}
                }
                temporary.persist(&target).map_err(|e| {
                    // The old file is gone: the new one, complete, is kept where it was written.
                    let kept = e.file.keep().map(|(_, path)| path);
                    let place =
                        kept.map_or_else(|_| "lost".into(), |p| format!("kept as {}", p.display()));
                    Failure::input(format!(
                        "cannot write {}: {} (the new file is {place})",
                        shown.display(),
                        e.error
                    ))
                })?;
                Ok(())
            }
        }
    }

    pub fn is_stdout(&self) -> bool {
        matches!(self, Sink::Stdout)
    }
}

/// A picture or a generated graph is not for a terminal: without `-o`, standard output must be
/// a file or a pipe. `-o -` writes there anyway.
pub fn not_to_a_terminal(output: Option<&Path>, what: &str) -> Result<(), Failure> {
    if output.is_none() && std::io::stdout().is_terminal() {
        return Err(Failure::usage(format!(
            "{what} would be written to the terminal: give -o FILE, or -o - to write it there anyway"
        )));
    }
    Ok(())
}
