# Sourced by the scripts that build (bench, profile, test, demo, CI): keeps
# chacha20's AVX-512 backend when the environment sets RUSTFLAGS, which
# replaces .cargo/config.toml's `--cfg chacha20_avx512` instead of adding
# to it. CARGO_ENCODED_RUSTFLAGS, when set, wins over both and gets it too.
# Without either, the config file's flags apply and nothing changes.
case " ${RUSTFLAGS-} " in
    *" chacha20_avx512 "*) ;;
    *) [ -n "${RUSTFLAGS+set}" ] && export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }--cfg chacha20_avx512" ;;
esac
if [ -n "${CARGO_ENCODED_RUSTFLAGS+set}" ]; then
    case "${CARGO_ENCODED_RUSTFLAGS}" in
        *chacha20_avx512*) ;;
        *) export CARGO_ENCODED_RUSTFLAGS="${CARGO_ENCODED_RUSTFLAGS:+$CARGO_ENCODED_RUSTFLAGS$'\x1f'}--cfg"$'\x1f'"chacha20_avx512" ;;
    esac
fi
