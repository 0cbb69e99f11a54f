# The CUDA SGEMM programs (kernels/: gen_data and sgemm with the cublas and tiled implementations), built
# with nvcc for the device profile's architecture. Binaries go under build/, never into the repository.

KERNEL_BUILD = f"build/kernels/{PROFILE['cuda_arch']}"


rule build_kernels:
    input:
        sorted(
            str(p) for p in Path(workflow.basedir, "kernels").iterdir() if p.is_file()
        ),
        **container_input(),
    output:
        sgemm=f"{KERNEL_BUILD}/sgemm",
        gen_data=f"{KERNEL_BUILD}/gen_data",
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
        + "make -f kernels/Makefile ARCH={params.arch} BUILD_DIR={params.build_dir} > {log} 2>&1"
