#!/bin/bash
# A test AMD chain in DIR, made with openssl as AMD's is (RSA-PSS SHA-384 salt 48, ECDSA P-384
# signing keys with AMD's TCB extensions 1.3.6.1.4.1.3704.1.3.N and the VCEK's hardware ID
# 1.3.6.1.4.1.3704.1.4): ark.pem (ARK-Milan, self-signed), ask.pem (SEV-Milan), asvk.pem
# (SEV-VLEK-Milan), vcek.pem and vlek.pem (one P-384 key, signer.key), all valid from now on.
# TCB bl=3 tee=0 snp=8 ucode=209 (raw 0xd108000000000003); chip ID c41f followed by zeros.
# Used by test_snp_issue (the fake configfs-tsm signs its reports with signer.key).
set -e
dir=$1
cd "$dir"
pss=(-sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:48 -sigopt rsa_mgf1_md:sha384 -sha384)
subj="/OU=Engineering/C=US/L=Santa Clara/ST=CA/O=Advanced Micro Devices"
chip=$(printf '%0128x' 0 | sed 's/^0000/c41f/')
echo "$chip" >chip.hex
cat >ext.cnf <<CNF
[ca]
basicConstraints=critical,CA:TRUE
keyUsage=critical,keyCertSign,cRLSign
[vcek]
1.3.6.1.4.1.3704.1.1=DER:02:01:00
1.3.6.1.4.1.3704.1.3.1=DER:02:01:03
1.3.6.1.4.1.3704.1.3.2=DER:02:01:00
1.3.6.1.4.1.3704.1.3.3=DER:02:01:08
1.3.6.1.4.1.3704.1.3.8=DER:02:02:00:d1
1.3.6.1.4.1.3704.1.4=DER:$(echo "$chip" | sed 's/../&:/g; s/:$//')
[vlek]
1.3.6.1.4.1.3704.1.3.1=DER:02:01:03
1.3.6.1.4.1.3704.1.3.2=DER:02:01:00
1.3.6.1.4.1.3704.1.3.3=DER:02:01:08
1.3.6.1.4.1.3704.1.3.8=DER:02:02:00:d1
CNF
{
	openssl genrsa -out ark.key 2048
	openssl req -new -x509 -key ark.key -subj "$subj/CN=ARK-Milan" -days 3650 "${pss[@]}" \
		-addext basicConstraints=critical,CA:TRUE -out ark.pem
	openssl genrsa -out ask.key 2048
	openssl req -new -key ask.key -subj "$subj/CN=SEV-Milan" -out ask.csr
	openssl x509 -req -in ask.csr -CA ark.pem -CAkey ark.key -set_serial 2 -days 3650 \
		"${pss[@]}" -extfile ext.cnf -extensions ca -out ask.pem
	openssl req -new -key ask.key -subj "$subj/CN=SEV-VLEK-Milan" -out asvk.csr
	openssl x509 -req -in asvk.csr -CA ark.pem -CAkey ark.key -set_serial 4 -days 3650 \
		"${pss[@]}" -extfile ext.cnf -extensions ca -out asvk.pem
	openssl ecparam -name secp384r1 -genkey -noout -out signer.key
	openssl req -new -key signer.key -subj "$subj/CN=SEV-VCEK" -out vcek.csr
	openssl x509 -req -in vcek.csr -CA ask.pem -CAkey ask.key -set_serial 3 -days 365 \
		"${pss[@]}" -extfile ext.cnf -extensions vcek -out vcek.pem
	openssl req -new -key signer.key -subj "$subj/CN=SEV-VLEK" -out vlek.csr
	openssl x509 -req -in vlek.csr -CA asvk.pem -CAkey ask.key -set_serial 5 -days 365 \
		"${pss[@]}" -extfile ext.cnf -extensions vlek -out vlek.pem
} >openssl.log 2>&1
