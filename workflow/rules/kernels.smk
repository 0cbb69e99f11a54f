# The CUDA SGEMM programs (kernels/: gen_data and sgemm with the cublas and tiled implementations), built
# with nvcc for the device profile's architecture. Binaries go under build/, never into the repository,
# beside build.provenance.json: nvcc's and the toolkit's versions, and cuBLAS's and cuRAND's file, version
# and source (toolkit or wheel). Libraries the toolkit lacks come from the nvidia-* wheels of the Python
# running the workflow (pip install -e '.[kernels]'); under docker, from the image's python3.

KERNEL_BUILD = f"build/kernels/{PROFILE['cuda_arch']}"
# A profile without a CUDA arch (cpu) has nothing to build for: planning the target stops, saying so,
# rather than running make with ARCH=None.
NO_KERNEL_ARCH = (
    f"gpurepro: build_kernels needs a GPU profile; profile {DEVICE} has no cuda_arch. Name one, e.g. "
    "snakemake build_kernels --cores 1 --config device=h100"
)
KERNEL_PYTHON = "python3" if container_exec([]) else sys.executable


rule build_kernels:
    input:
        lambda wildcards: (
            sorted(
                str(p)
                for p in Path(workflow.basedir, "kernels").iterdir()
                if p.is_file()
            )
            if PROFILE["cuda_arch"]
            else stop_planning(NO_KERNEL_ARCH)
        ),
        **container_input(),
    output:
        sgemm=f"{KERNEL_BUILD}/sgemm",
        gen_data=f"{KERNEL_BUILD}/gen_data",
        provenance=f"{KERNEL_BUILD}/build.provenance.json",
    log:
        f"{RESULTS}/logs/build_kernels.log",
    benchmark:
        f"{RESULTS}/benchmarks/build_kernels.tsv"
    params:
        arch=PROFILE["cuda_arch"],
        build_dir=lambda wildcards, output: Path(output.sgemm).parent,
    # nvcc is in the project's image: under docker the build runs there, with no GPU.
    shell:
        container_exec([])
        + "make -f kernels/Makefile ARCH={params.arch} BUILD_DIR={params.build_dir} "
        + f"PYTHON={KERNEL_PYTHON} > {{log}} 2>&1"
