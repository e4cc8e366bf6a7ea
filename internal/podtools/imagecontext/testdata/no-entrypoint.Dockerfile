# Written by `paddlejob image context`.
# Build: docker build -t registry.example.com/team/wd:v1 <this directory>
FROM paddlepaddle/paddle:2.6.1
COPY package/ /workspace/wide_deep/
WORKDIR /workspace/wide_deep
